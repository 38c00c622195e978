"""The flow-run command of the folder's process worker (`python -m evalduck.flows.local.warm.flow_run`, set as the work
pool's default command by flows/local/install/pool.py): the flow run in a child of the warm starter, which has Prefect
and the flows imported already; without one, `python -m prefect.engine` in this process, as Prefect's own
default command does."""

from __future__ import annotations

import runpy
import sys

from evalduck.flows.local.warm.client import exit_like, run_via_starter


def main() -> None:
    """The flow run in a child of the folder's starter, else Prefect's engine in this process."""
    code = run_via_starter("engine", sys.argv[1:])
    if code is not None:
        exit_like(code)
    sys.argv[0] = "prefect.engine"
    runpy.run_module("prefect.engine", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
