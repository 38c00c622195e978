"""Local Prefect installation for evalduck: server, work pool, deployments and one process worker.

`evalduck serve` / `make serve` and the end-to-end tests both go through these functions, so the tests
exercise the same start and stop paths a user does. Everything started here gets its own process group
and is recorded by process id in a state file; `stop` ends only what that file names.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import BaseModel, Field, ValidationError

from flows.folder import STATE_DIR_ENV
from flows.settings import CACHE_DIR_ENV, DB_ENV

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient

__all__ = ("ServeOptions", "ServeState", "ServeError", "serve", "stop", "WORK_POOL", "DEFAULT_PORT")

WORK_POOL = "evalduck-pool"
DEFAULT_PORT = 4200
# Variables every process we start gets: no telemetry, no price-list download, no stray bytecode in the project.
QUIET_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "PYTHONDONTWRITEBYTECODE": "1",
}


class ServeError(RuntimeError):
    """A step of `serve` failed; the message says which and where its log is."""


class ServeState(BaseModel):
    """What `serve` started, written to the state file so that `stop` ends exactly that."""

    api_url: str
    ui_url: str
    server_pid: int | None = Field(None, description="None when an already running server was reused")
    worker_pid: int | None = None
    starter_pid: int | None = Field(None, description="the warm starter's (flows/warm/starter.py)")
    starter_socket: str | None = Field(None, description="the unix socket the warm starter listens on")
    work_pool: str = WORK_POOL
    db_path: str | None = Field(None, description="the worker's results file; None for a server `run` started")
    project_dir: str
    prefect_home: str | None = Field(None, description="the server's PREFECT_HOME (its database)")
    started_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


def state_path(state_dir: Path) -> Path:
    return state_dir / "serve.json"


def read_state(state_dir: Path) -> ServeState | None:
    path = state_path(state_dir)
    if not path.exists():
        return None
    try:
        return ServeState.model_validate_json(path.read_text())
    except ValidationError as exc:
        raise ServeError(
            f"{path} is not a state file written by `evalduck serve` ({exc.error_count()} problem(s)); "
            "stop any Prefect server/worker it started by hand, then delete it"
        ) from exc


def write_state(state_dir: Path, state: ServeState) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    state_path(state_dir).write_text(state.model_dump_json(indent=2) + "\n")


def prefect_executable() -> str:
    """The `prefect` script of the running interpreter's environment, so a bare `python` on PATH never matters."""
    return str(Path(sys.executable).with_name("prefect"))


def prefect_home() -> str:
    """The PREFECT_HOME a server started from here uses (its database lives there)."""
    return os.environ.get("PREFECT_HOME") or str(Path.home() / ".prefect")


def configured_api_url() -> str | None:
    """PREFECT_API_URL from the environment or the active Prefect profile (imports Prefect)."""
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    return str(url).rstrip("/") if url else None


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **QUIET_ENV}
    env.update(extra or {})
    return env


# --- the server -------------------------------------------------------------------------------------------


def is_healthy(api_url: str, timeout: float = 2.0) -> bool:
    """True when `GET {api_url}/health` answers; the route stays open when basic auth is on."""
    try:
        return httpx.get(f"{api_url}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def wait_healthy(
    api_url: str, timeout: float, process: subprocess.Popen[bytes] | None = None, log: Path | None = None
) -> None:
    """Poll the health route until it answers; fail early with the log's tail if the server process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_healthy(api_url):
            return
        if process is not None and process.poll() is not None:
            raise ServeError(f"the Prefect server exited with code {process.returncode}{log_tail(log)}")
        time.sleep(0.5)
    raise ServeError(f"the Prefect server at {api_url} did not answer /health within {timeout:.0f} s{log_tail(log)}")


def start_server(host: str, port: int, log: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start `prefect server start` in its own process group, detached from our terminal.

    PREFECT_SERVER_API_HOST/PORT are set as well as the flags: the UI asks `/ui-settings` for its API URL,
    and without them that answer stays on 127.0.0.1:4200 whatever port the server listens on.
    """
    server_env = child_env({"PREFECT_SERVER_API_HOST": host, "PREFECT_SERVER_API_PORT": str(port), **(env or {})})
    server_env.pop("PREFECT_API_URL", None)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            [prefect_executable(), "server", "start", "--host", host, "--port", str(port)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=server_env, start_new_session=True,
        )


def start_starter(
    state_dir: Path, env: Mapping[str, str] | None = None, after: int | None = None
) -> subprocess.Popen[bytes]:
    """Start the folder's warm starter in a session of its own; it logs to ``warm.log`` in ``state_dir``
    and, given ``after`` (a run's pid), imports its preloads only once that run has ended.

    Its environment is this process's (plus ``env``): the variables fixed at its start (PYTHONPATH...) are
    the ones a run must share to be forked from it (flows/warm/wire.py)."""
    from flows.warm.starter import MARKER

    log = state_dir / "warm.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    starter_env = {**os.environ, **QUIET_ENV, **(env or {})}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-P", "-m", MARKER, str(state_dir), *(["--after", str(after)] if after else [])],
            stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, env=starter_env, start_new_session=True,
        )


def ensure_starter(
    state_dir: Path, state: ServeState, env: Mapping[str, str] | None = None, after: int | None = None
) -> ServeState:
    """``state`` with a live warm starter: the recorded one, else one started now (and recorded)."""
    from flows.warm.starter import MARKER
    from flows.warm.wire import socket_path

    if state.starter_pid is not None and is_alive(state.starter_pid, MARKER):
        return state
    process = start_starter(state_dir, env, after)
    state = state.model_copy(update={"starter_pid": process.pid, "starter_socket": str(socket_path(state_dir))})
    write_state(state_dir, state)
    return state


def stop_starter(pid: int) -> str:
    """SIGTERM (it ends at once; the runs it forked die with it), SIGKILL after 5 s."""
    from flows.warm.starter import MARKER

    if not is_alive(pid, MARKER):
        return f"the warm starter (pid {pid}) was not running"
    return _escalate(pid, "the warm starter", [(lambda: _signal_group(pid, signal.SIGTERM), 5.0, "")])


def ui_api_url(base_url: str) -> str | None:
    """The API URL the browser UI will call, as the server announces it."""
    try:
        return httpx.get(f"{base_url}/ui-settings", timeout=5).json().get("api_url")
    except (httpx.HTTPError, ValueError):
        return None


# --- work pool, deployments, worker -----------------------------------------------------------------------


@contextmanager
def _client(api_url: str) -> Iterator[SyncPrefectClient]:
    """Prefect's own client (it sends PREFECT_API_AUTH_STRING), with API errors turned into ServeError."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    try:
        with temporary_settings({PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
            yield client
    except httpx.HTTPStatusError as exc:
        hint = " (basic auth: set PREFECT_API_AUTH_STRING)" if exc.response.status_code == 401 else ""
        raise ServeError(f"the Prefect API at {api_url} refused {exc.request.url.path}: {exc}{hint}") from exc


def flow_run_command() -> str:
    """What the worker runs for a flow run: the warm starter's client (flows/warm/flow_run.py), which falls
    back to Prefect's own `python -m prefect.engine`, with this environment's interpreter."""
    return shlex.join([sys.executable, "-m", "flows.warm.flow_run"])


def _job_template() -> dict[str, Any]:
    from prefect.workers.process import ProcessWorker

    template = ProcessWorker.get_default_base_job_template()
    template["variables"]["properties"]["command"]["default"] = flow_run_command()
    return template


def ensure_work_pool(api_url: str, name: str = WORK_POOL) -> bool:
    """Create the process work pool unless it exists, with ``flow_run_command`` as its default command (an
    existing pool of that name gets it too); True when it was created."""
    from prefect.client.schemas.actions import WorkPoolCreate, WorkPoolUpdate
    from prefect.exceptions import ObjectNotFound

    template = _job_template()
    with _client(api_url) as client:
        try:
            pool = client.read_work_pool(name)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(name=name, type="process", base_job_template=template))
            return True
        if pool.base_job_template != template:
            client.update_work_pool(name, WorkPoolUpdate(base_job_template=template))
        return False


def wait_worker_online(
    api_url: str, process: subprocess.Popen[bytes], log: Path, since: datetime, pool: str = WORK_POOL,
    timeout: float = 120.0,
) -> None:
    """Wait for a heartbeat from a worker of `pool` newer than `since`; fail with the log if ours exits."""
    deadline = time.monotonic() + timeout
    with _client(api_url) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ServeError(f"the worker exited with code {process.returncode}{log_tail(log)}")
            beats = [w.last_heartbeat_time for w in client.read_workers_for_work_pool(pool)]
            if any(beat is not None and beat >= since for beat in beats):
                return
            time.sleep(0.5)
    raise ServeError(f"the worker did not report to {api_url} within {timeout:.0f} s{log_tail(log)}")


def deploy_all(
    project_dir: Path, api_url: str, log: Path, prefect_file: Path | None = None, env: Mapping[str, str] | None = None
) -> str:
    """`prefect --no-prompt deploy --all` from the project folder (entrypoints are relative to it)."""
    command = [prefect_executable(), "--no-prompt", "deploy", "--all"]
    if prefect_file is not None:
        command += ["--prefect-file", str(prefect_file)]
    deploy_env = child_env({**(env or {}), "PREFECT_API_URL": api_url})
    done = subprocess.run(
        command, cwd=project_dir, env=deploy_env, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise ServeError(f"`prefect deploy --all` failed (exit {done.returncode}){log_tail(log, 30)}")
    return done.stdout


def start_worker(
    api_url: str, project_dir: Path, log: Path, env: Mapping[str, str], pool: str = WORK_POOL
) -> subprocess.Popen[bytes]:
    """Start a process worker in its own process group; flow runs it starts inherit `env`.

    It polls for scheduled runs every 2 s (Prefect's default is 10 s, which a click in the UI waits for
    on average 5 s); PREFECT_WORKER_QUERY_SECONDS set by the user wins."""
    env = {"PREFECT_WORKER_QUERY_SECONDS": os.environ.get("PREFECT_WORKER_QUERY_SECONDS", "2"), **env}
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            [prefect_executable(), "worker", "start", "--pool", pool, "--type", "process"],
            cwd=project_dir, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=child_env({"PREFECT_API_URL": api_url, **env}), start_new_session=True,
        )


# --- stopping, by process id ------------------------------------------------------------------------------


def is_alive(pid: int, marker: str | None = None) -> bool:
    """True when `pid` runs and, where /proc can tell, its command line still contains `marker`.

    The marker guards against a recycled pid: a stale state file must never make us signal a stranger.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    proc = Path(f"/proc/{pid}")
    if not proc.exists():
        return True  # no /proc (macOS): trust the pid
    try:
        if (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z":
            return False  # exited; only waiting for its parent to reap it
        text = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return marker is None or marker in text


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_alive(pid):
            return True
        time.sleep(0.1)
    return not is_alive(pid)


def _escalate(pid: int, what: str, steps: list[tuple[Callable[[], None], float, str]]) -> str:
    """Send each signal in turn until the process is gone; say which one ended it."""
    for send, wait, how in steps:
        send()
        if _wait_gone(pid, wait):
            return f"stopped {what} (pid {pid}){how}"
    _signal_group(pid, signal.SIGKILL)
    _wait_gone(pid, 5.0)
    return f"killed {what} (pid {pid})"


def stop_worker(pid: int, grace: float = 5.0) -> str:
    """SIGTERM, then SIGINT the group, then SIGKILL it.

    Prefect's worker answers the first SIGTERM with "Sending SIGINT to the process worker" and can hang
    there for over 30 s; a second SIGINT makes it SIGKILL itself. The group signals also reach the flow
    runs it started, which live in its process group.
    """
    if not is_alive(pid, "worker"):
        return f"the worker (pid {pid}) was not running"
    return _escalate(pid, "the worker", [
        (lambda: os.kill(pid, signal.SIGTERM), grace, ""),
        (lambda: _signal_group(pid, signal.SIGINT), 5.0, " after SIGINT"),
    ])


def stop_server(pid: int) -> str:
    """SIGTERM the server's process group (it exits in well under a second), SIGKILL after 15 s."""
    if not is_alive(pid, "server"):
        return f"the Prefect server (pid {pid}) was not running"
    return _escalate(pid, "the Prefect server", [(lambda: _signal_group(pid, signal.SIGTERM), 15.0, "")])


def log_tail(log: Path | None, lines: int = 15) -> str:
    if log is None or not log.exists():
        return ""
    tail = log.read_text(errors="replace").splitlines()[-lines:]
    return f"; last lines of {log}:\n" + "\n".join(tail)


# --- the whole installation -------------------------------------------------------------------------------


class ServeOptions(BaseModel):
    """Where things go; the CLI fills these from flags and environment variables."""

    project_dir: Path
    state_dir: Path
    db_path: Path
    cache_dir: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    api_url: str | None = Field(None, description="an existing server (PREFECT_API_URL); never started or stopped")
    prefect_file: Path | None = None
    health_timeout: float = 180.0
    extra_env: dict[str, str] = Field(default_factory=dict, description="added to every process started")


def ui_url_for(api_url: str) -> str:
    return api_url.removesuffix("/").removesuffix("/api")


def worker_env(options: ServeOptions) -> dict[str, str]:
    """The environment of the worker, inherited by every flow run it starts.

    The DuckDB file and the step cache folder are absolute paths into the project, the same ones
    `evalduck run` uses from the project folder, so UI, scheduled and CLI runs share rows and cache; the
    state folder is where a flow run finds the warm starter (flows/warm/flow_run.py).
    """
    return {DB_ENV: str(options.db_path), CACHE_DIR_ENV: str(options.cache_dir), STATE_DIR_ENV: str(options.state_dir)}


def _reusable(state: ServeState | None) -> bool:
    return (
        state is not None
        and state.worker_pid is not None
        and is_alive(state.worker_pid, "worker")
        and is_healthy(state.api_url)
    )


def _ensure_server(
    options: ServeOptions, previous: ServeState | None, say: Callable[[str], None]
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
    if previous is not None and previous.server_pid is not None and is_alive(previous.server_pid, "server") \
            and is_healthy(previous.api_url):  # e.g. the one `evalduck run` started for this folder
        say(f"Prefect server already running at {previous.api_url} (pid {previous.server_pid}).")
        return previous.api_url, previous.server_pid
    api_url = f"http://{options.host}:{options.port}/api"
    if is_healthy(api_url):
        ours = previous.server_pid if previous is not None and previous.api_url == api_url else None
        if ours is not None and is_alive(ours, "server"):
            say(f"Prefect server already running at {api_url} (pid {ours}).")
            return api_url, ours
        say(f"A Prefect server already answers at {api_url}; using it (it will not be stopped by `stop`).")
        return api_url, None
    log = options.state_dir / "server.log"
    say(f"Starting the Prefect server on {options.host}:{options.port} (log: {log}) ...")
    process = start_server(options.host, options.port, log, options.extra_env)
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
    previous = read_state(options.state_dir)
    if _reusable(previous) and previous is not None:
        say(f"evalduck is already serving: worker pid {previous.worker_pid}, UI at {previous.ui_url}")
        return ensure_starter(options.state_dir, previous, options.extra_env)
    if previous is not None and previous.worker_pid is not None and is_alive(previous.worker_pid, "worker"):
        # Its server is gone; a fresh worker is started below, so this one must not be left orphaned.
        say(stop_worker(previous.worker_pid))
    api_url, server_pid = _ensure_server(options, previous, say)
    if ensure_work_pool(api_url):
        say(f"Created the process work pool '{WORK_POOL}'.")
    deploy_log = options.state_dir / "deploy.log"
    output = deploy_all(options.project_dir, api_url, deploy_log, options.prefect_file, options.extra_env)
    deployed = [line.split("'")[1] for line in output.splitlines() if "Deployment '" in line]
    say(f"Deployed {', '.join(deployed) or 'prefect.yaml'} (log: {deploy_log}).")
    worker_log = options.state_dir / "worker.log"
    # Two seconds of slack for the clock of a remote server.
    since = datetime.now(UTC) - timedelta(seconds=2)
    worker = start_worker(api_url, options.project_dir, worker_log, {**options.extra_env, **worker_env(options)})
    state = _state(options, api_url, server_pid, worker.pid)
    if previous is not None:  # a warm starter a run started for this folder serves the worker's runs too
        state = state.model_copy(update={"starter_pid": previous.starter_pid, "starter_socket": previous.starter_socket})
    write_state(options.state_dir, state)
    state = ensure_starter(options.state_dir, state, options.extra_env)
    wait_worker_online(api_url, worker, worker_log, since)
    say(f"Worker online on pool '{WORK_POOL}' (pid {worker.pid}, log: {worker_log}); results go to {options.db_path}.")
    say(f"Prefect UI: {state.ui_url}")
    return state


def stop(state_dir: Path, say: Callable[[str], None] = print) -> bool:
    """End what `serve` or a run recorded: the worker, the warm starter, then the server; False when nothing
    was recorded."""
    state = read_state(state_dir)
    if state is None:
        say(f"Nothing to stop: no {state_path(state_dir)}.")
        return False
    if state.worker_pid is not None:
        say(stop_worker(state.worker_pid))
    if state.starter_pid is not None:
        say(stop_starter(state.starter_pid))
    if state.server_pid is not None:
        say(stop_server(state.server_pid))
    else:
        say(f"Left the Prefect server at {state.api_url} running (evalduck did not start it).")
    state_path(state_dir).unlink(missing_ok=True)
    return True
