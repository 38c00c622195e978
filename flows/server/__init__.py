"""Local Prefect installation for evalduck: server, work pool, deployments and one process worker.

`evalduck serve` / `make serve` and the end-to-end tests both go through these functions, so the tests
exercise the same start and stop paths a user does. Everything started here gets its own process group
and is recorded by process id in a state file; `stop` ends only what that file names. state.py (the state
file, environments, paths), processes.py (start, health, stop), pool.py (work pool, deployments),
credentials.py (the basic auth of a server evalduck starts), lifecycle.py (serve, stop).
"""

from __future__ import annotations

from evalduck.flows.server import credentials, lifecycle, pool, processes, state
from evalduck.flows.server.credentials import *  # noqa: F403
from evalduck.flows.server.lifecycle import *  # noqa: F403 - the package's names are its modules' names
from evalduck.flows.server.pool import *  # noqa: F403
from evalduck.flows.server.processes import *  # noqa: F403
from evalduck.flows.server.state import *  # noqa: F403

__all__ = (*state.__all__, *credentials.__all__, *processes.__all__, *pool.__all__, *lifecycle.__all__)
