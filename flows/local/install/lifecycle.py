"""`evalduck serve` and `evalduck stop`: a server (or the configured one), the pool, the deployments and a worker."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, Field

from evalduck.flows.local.folder import STATE_DIR_ENV
from evalduck.flows.local.idle import STATUS_FILE as IDLE_STATUS
from evalduck.flows.local.install.credentials import (
    authenticates,
    client_auth,
    client_env,
    folder_auth,
    login_hint,
    server_env,
)
from evalduck.flows.local.install.pool import (
    deploy_all,
    ensure_work_pool,
    ui_api_url,
    wait_worker_online,
)
from evalduck.flows.local.install.processes import ensure_starter, is_healthy, start_server, start_worker, wait_healthy
from evalduck.flows.local.install.state import (
    DEFAULT_PORT,
    WORK_POOL,
    ServeError,
    ServeState,
    forget_state,
    prefect_home,
    read_state,
    server_lock,
    state_path,
    write_state,
)
from evalduck.flows.local.install.stopping import is_alive, stop_server, stop_starter, stop_watcher, stop_worker
from evalduck.flows.local.warm.wire import STATUS_FILE as WARM_STATUS
from evalduck.flows.prefect_settings import ui_url_for
from evalduck.flows.settings import CACHE_DIR_ENV, DB_ENV

__all__ = ("ServeOptions", "ui_url_for", "worker_env", "serve", "stop", "stop_all")

class ServeOptions(BaseModel):
    """Where things go; the CLI fills these from flags and environment variables."""

    project_dir: Path
    state_dir: Path
    db_path: str | Path = Field(description="the results file, or a shared store's ducklake: URL (kept a string)")
    cache_dir: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    api_url: str | None = Field(None, description="an existing server (PREFECT_API_URL); never started or stopped")
    prefect_file: Path | None = None
    health_timeout: float = 180.0
    extra_env: dict[str, str] = Field(default_factory=dict, description="added to every process started")


def worker_env(options: ServeOptions) -> dict[str, str]:
    """The environment of the worker, inherited by every flow run it starts.

    The DuckDB file and the step cache folder are absolute paths into the project, the same ones
    `evalduck run` uses from the project folder, so UI, scheduled and CLI runs share rows and cache; the
    state folder is where a flow run finds the warm starter (flows/local/warm/flow_run.py).
    """
    return {DB_ENV: str(options.db_path), CACHE_DIR_ENV: str(options.cache_dir), STATE_DIR_ENV: str(options.state_dir)}


def _ours(state: ServeState, auth: str | None) -> bool:
    """A server of the record that is ours: alive, and taking this folder's credentials (one that answers
    without them is from before servers had them, or not ours)."""
    return (state.server_pid is not None and is_alive(state.server_pid, "server") and auth is not None
            and authenticates(state.api_url, auth))


def _reusable(state: ServeState | None, auth: str | None) -> bool:
    return (
        state is not None
        and state.worker_pid is not None
        and is_alive(state.worker_pid, "worker")
        and is_healthy(state.api_url)
        and (state.server_pid is None or _ours(state, auth))
    )


def _ensure_server(
    options: ServeOptions, previous: ServeState | None, auth: str | None, say: Callable[[str], None]
) -> tuple[str, int | None]:
    """The API URL to use and the pid of the server when it is ours to stop."""
    if options.api_url:
        if not is_healthy(options.api_url):
            raise ServeError(
                f"PREFECT_API_URL={options.api_url} does not answer /health: start that server, "
                "or unset PREFECT_API_URL to have evalduck start a local one"
            )
        say(f"Using the Prefect server at {options.api_url} (PREFECT_API_URL); it will not be stopped by `stop`.")
        return options.api_url, None
    assert auth is not None
    ours = previous is not None and _ours(previous, auth)
    if previous is not None and ours and previous.services == "all":
        say(f"Prefect server already running at {previous.api_url} (pid {previous.server_pid}).")
        return previous.api_url, previous.server_pid
    if previous is not None and previous.server_pid is not None and is_alive(previous.server_pid, "server"):
        say(stop_server(previous.server_pid) + (" (started by `evalduck run` without the scheduler and the other "
            "services deployments need: a new one has them)" if ours else " (it did not take this folder's credentials)"))
    api_url = f"http://{options.host}:{options.port}/api"
    if is_healthy(api_url):
        # Never adopted: its worker would run what anyone who can reach it asks for, as this user.
        raise ServeError(
            f"another Prefect server, not this folder's, answers at {api_url}: pick another --port (EVALDUCK_PORT), "
            "or to use that server set PREFECT_API_URL to it (with PREFECT_API_AUTH_STRING if it has basic auth)"
        )
    log = options.state_dir / "server.log"
    say(f"Starting the Prefect server on {options.host}:{options.port} (log: {log}) ...")
    process = start_server(options.host, options.port, log, {**options.extra_env, **server_env(auth)})
    write_state(options.state_dir, _state(options, api_url, process.pid, None))
    started = time.monotonic()
    wait_healthy(api_url, options.health_timeout, process, log)
    say(f"Prefect server healthy after {time.monotonic() - started:.1f} s (pid {process.pid}).")
    announced = ui_api_url(ui_url_for(api_url))
    if announced != api_url and not os.environ.get("PREFECT_UI_API_URL"):
        say(f"warning: the UI will call {announced}, not {api_url}; set PREFECT_UI_API_URL={api_url}")
    return api_url, process.pid


def _state(options: ServeOptions, api_url: str, server_pid: int | None, worker_pid: int | None) -> ServeState:
    return ServeState(
        api_url=api_url, ui_url=ui_url_for(api_url), server_pid=server_pid, worker_pid=worker_pid,
        db_path=str(options.db_path), project_dir=str(options.project_dir),
        prefect_home=prefect_home(),
    )


def serve(options: ServeOptions, say: Callable[[str], None] = print) -> ServeState:
    """Start (or reuse) a server, create the work pool, deploy `prefect.yaml`, start a worker.

    Idempotent: with a live worker and a healthy server recorded in the state file it only says so.
    """
    with server_lock(options.state_dir, options.health_timeout + 300):  # not while a run starts the server
        return _serve(options, say)


def _serve(options: ServeOptions, say: Callable[[str], None]) -> ServeState:
    previous = read_state(options.state_dir)
    # The credentials of a server started for this folder; a server the user names keeps its own settings.
    auth = None if options.api_url else folder_auth(options.state_dir)
    hint = "" if auth is None else f" ({login_hint(options.state_dir)})"
    if _reusable(previous, auth) and previous is not None:
        say(f"evalduck is already serving: worker pid {previous.worker_pid}, UI at {previous.ui_url}{hint}")
        return ensure_starter(options.state_dir, previous, options.extra_env)
    if previous is not None and previous.worker_pid is not None and is_alive(previous.worker_pid, "worker"):
        # Its server is gone; a fresh worker is started below, so this one must not be left orphaned.
        say(stop_worker(previous.worker_pid))
    api_url, server_pid = _ensure_server(options, previous, auth, say)
    clients = {**options.extra_env, **client_env(auth)}
    with client_auth(auth):
        if ensure_work_pool(api_url):
            say(f"Created the process work pool '{WORK_POOL}'.")
    deploy_log = options.state_dir / "deploy.log"
    output = deploy_all(options.project_dir, api_url, deploy_log, options.prefect_file, clients)
    deployed = [line.split("'")[1] for line in output.splitlines() if "Deployment '" in line]
    say(f"Deployed {', '.join(deployed) or 'prefect.yaml'} (log: {deploy_log}).")
    worker_log = options.state_dir / "worker.log"
    # Two seconds of slack for the clock of a remote server.
    since = datetime.now(UTC) - timedelta(seconds=2)
    worker = start_worker(api_url, options.project_dir, worker_log, {**clients, **worker_env(options)})
    state = _state(options, api_url, server_pid, worker.pid).model_copy(update={"auth": auth})
    if previous is not None:  # a warm starter a run started for this folder serves the worker's runs too
        state = state.model_copy(update={"starter_pid": previous.starter_pid, "starter_socket": previous.starter_socket})
    write_state(options.state_dir, state)
    state = ensure_starter(options.state_dir, state, options.extra_env)
    with client_auth(auth):
        wait_worker_online(api_url, worker, worker_log, since)
    say(f"Worker online on pool '{WORK_POOL}' (pid {worker.pid}, log: {worker_log}); results go to {options.db_path}.")
    say(f"Prefect UI: {state.ui_url}{hint}")
    return state


def stop(state_dir: Path, say: Callable[[str], None] = print) -> bool:
    """End what `serve` or a run recorded: the idle watcher, the worker, the warm starter, then the server, and
    forget them (the record and their status files); False when nothing was recorded."""
    state = read_state(state_dir)
    if state is None:
        say(f"Nothing to stop: no {state_path(state_dir)}.")
        return False
    _stop_recorded(state, say)
    forget_state(state_dir)
    for status in (IDLE_STATUS, WARM_STATUS):  # what the watcher and the starter said about themselves
        (state_dir / status).unlink(missing_ok=True)
    return True


def _stop_recorded(state: ServeState, say: Callable[[str], None]) -> None:
    if state.watcher_pid is not None and state.watcher_pid != os.getpid():  # first: it would stop them too
        say(stop_watcher(state.watcher_pid))
    if state.worker_pid is not None:
        say(stop_worker(state.worker_pid))
    if state.starter_pid is not None:
        say(stop_starter(state.starter_pid))
    if state.server_pid is not None:
        say(stop_server(state.server_pid))
    else:
        say(f"Left the Prefect server at {state.api_url} running (evalduck did not start it).")


def stop_all(say: Callable[[str], None] = print) -> int:
    """`stop` in every folder of this user's registry (flows/local/install/folders.py); a folder whose record is gone
    (deleted, moved) is stopped from the registry's copy. Returns how many folders had a record."""
    from evalduck.flows.local.install.folders import registered, unregister

    folders = registered()
    if not folders:
        say("Nothing to stop: no folder of this user's has evalduck processes recorded.")
    for state_dir, copy in folders:
        say(f"{state_dir.parent}:")
        try:
            if state_path(state_dir).exists():
                stop(state_dir, say=lambda line: say(f"  {line}"))
                continue
            _stop_recorded(ServeState.model_validate(copy), say=lambda line: say(f"  {line}"))
            say(f"  (from the registry's copy: {state_path(state_dir)} is gone)")
        except (ServeError, ValueError) as exc:  # a record that is not ours to read: said, the others still stopped
            say(f"  not stopped: {exc}")
            continue
        unregister(state_dir)
    return len(folders)
