"""``prefect server start`` for a server a run starts, with its background worker polling less often.

Prefect 3.9's server runs a Docket worker for its background tasks whatever services are on, and that
worker wakes every 250 ms twice over (``minimum_check_interval``, ``scheduling_resolution``: pydocket's
defaults, which Prefect exposes no setting for). Idle, with the services a folder without deployments does
not need turned off (state.RUNS_ONLY_SERVICES_OFF), those wake-ups are most of what the server still costs.
Here they are 2 s: the tasks that worker runs for such a server (log and artifact clean-up, the hourly event
vacuum) may start up to 2 s later. When the installed Docket's worker lacks these parameters the server
starts as Prefect starts it (tests/flows/test_idle_parts.py fails then, so that an upgrade is noticed).

    python -m evalduck.flows.local.install.calm_server server start --host 127.0.0.1 --port 4200

(the arguments are `prefect`'s, so its command line reads `... server start ...` as Prefect's own does).
"""

from __future__ import annotations

import inspect
import sys
from datetime import timedelta
from typing import Any

__all__ = ("CALM_INTERVAL", "calm_docket_worker", "main")

CALM_INTERVAL = timedelta(seconds=2)
_PARAMETERS = ("minimum_check_interval", "scheduling_resolution")


def calm_docket_worker() -> bool:
    """Make the server's Docket worker poll every CALM_INTERVAL; False when this Docket cannot."""
    import prefect.server.api.background_workers as workers

    base = workers.Worker
    if not set(_PARAMETERS) <= set(inspect.signature(base.__init__).parameters):
        return False

    class CalmWorker(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            for name in _PARAMETERS:
                kwargs.setdefault(name, CALM_INTERVAL)
            super().__init__(*args, **kwargs)

    workers.Worker = CalmWorker  # the name background_worker() calls
    return True


def main() -> None:
    """The Prefect server, started as `prefect server start` is, with the calmer settings above."""
    from prefect.cli import app

    calm_docket_worker()
    sys.argv = ["prefect", *sys.argv[1:]]
    sys.exit(app())


if __name__ == "__main__":
    main()
