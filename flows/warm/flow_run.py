"""The flow-run command an existing work pool may still name (``python -m evalduck.flows.warm.flow_run``);
it runs the current one, ``evalduck.flows.local.warm.flow_run``. `evalduck serve` rewrites the pool's
command, after which nothing runs this."""

from __future__ import annotations

from evalduck.flows.local.warm.flow_run import main

if __name__ == "__main__":
    main()
