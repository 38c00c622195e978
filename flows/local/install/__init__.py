"""Local Prefect installation for evalduck: server, work pool, deployments and one process worker.

`evalduck serve` / `make serve` and the end-to-end tests both go through these functions, so the tests
exercise the same start and stop paths a user does. Everything started here gets its own process group
and is recorded by process id in a state file; `stop` ends only what that file names. state.py (the state
file, environments, paths), processes.py (start, health), stopping.py (a recorded pid: alive? stop it),
pool.py (work pool, deployments), credentials.py (the basic auth of a server evalduck starts), lifecycle.py
(serve, stop).
"""

from __future__ import annotations

from evalduck.flows.local.install import credentials, lifecycle, pool, processes, state, stopping
from evalduck.flows.local.install.credentials import *  # noqa: F403
from evalduck.flows.local.install.lifecycle import *  # noqa: F403 - the package's names are its modules' names
from evalduck.flows.local.install.pool import *  # noqa: F403
from evalduck.flows.local.install.processes import *  # noqa: F403
from evalduck.flows.local.install.state import *  # noqa: F403
from evalduck.flows.local.install.stopping import *  # noqa: F403

__all__ = (*state.__all__, *credentials.__all__, *processes.__all__, *stopping.__all__, *pool.__all__,
           *lifecycle.__all__)
