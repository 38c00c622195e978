"""Local Prefect installation for evalduck: server, work pool, deployments and one process worker.

`evalduck serve` / `make serve` and the end-to-end tests both go through these functions, so the tests
exercise the same start and stop paths a user does. Everything started here gets its own process group
and is recorded by process id in a state file; `stop` ends only what that file names. state.py (the state
file, environments, paths), processes.py (start, health, stop), pool.py (work pool, deployments),
lifecycle.py (serve, stop).
"""

from __future__ import annotations

from flows.server.lifecycle import ServeOptions, serve, stop, ui_url_for, worker_env
from flows.server.pool import (
    deploy_all,
    ensure_work_pool,
    flow_run_command,
    ui_api_url,
    wait_worker_online,
)
from flows.server.processes import (
    ensure_starter,
    is_alive,
    is_healthy,
    log_tail,
    start_server,
    start_starter,
    start_worker,
    stop_server,
    stop_starter,
    stop_worker,
    wait_healthy,
)
from flows.server.state import (
    DEFAULT_PORT,
    QUIET_ENV,
    WORK_POOL,
    ServeError,
    ServeState,
    child_env,
    configured_api_url,
    prefect_executable,
    prefect_home,
    read_state,
    state_path,
    write_state,
)

__all__ = (
    "DEFAULT_PORT",
    "QUIET_ENV",
    "ServeError",
    "ServeState",
    "WORK_POOL",
    "child_env",
    "configured_api_url",
    "prefect_executable",
    "prefect_home",
    "read_state",
    "state_path",
    "write_state",
    "ensure_starter",
    "is_alive",
    "is_healthy",
    "log_tail",
    "start_server",
    "start_starter",
    "start_worker",
    "stop_server",
    "stop_starter",
    "stop_worker",
    "wait_healthy",
    "deploy_all",
    "ensure_work_pool",
    "flow_run_command",
    "ui_api_url",
    "wait_worker_online",
    "ServeOptions",
    "serve",
    "stop",
    "ui_url_for",
    "worker_env",
)
