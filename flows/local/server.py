"""Which Prefect server a run talks to, and the one local server per project folder that runs reuse.

Prefect's local mode starts a temporary server for every process and stops it at exit, seconds per run
(docs/benchmarks-history.md, 'Runs from the terminal with one local server per folder'), and the runs never
show in a UI. So `evalduck run` uses, in order:

1. the server named by ``PREFECT_API_URL`` (or the active Prefect profile);
2. the server recorded in this folder's state file (``.evalduck/serve.json``, written by `evalduck serve`
   or by an earlier run), when it answers its health check;
3. otherwise a local Prefect server started now for this folder, in the background, in a session of its
   own, recorded in that state file (pid, port, PREFECT_HOME), and left running for the next runs until
   `evalduck stop`, or until the folder's idle watcher (flows/local/idle.py) stops it after EVALDUCK_IDLE_TIMEOUT
   seconds with no run and no request.

Steps 2 and 3 also make sure the folder has a live warm starter (flows/local/warm/starter.py), recorded in the same
file, which later runs are forked from. With ``CI`` set, ``--ephemeral`` or ``EVALDUCK_EPHEMERAL=1`` a CLI run gets a temporary server of its own
(``run_scoped_server``) and leaves nothing behind. ``run_evals`` (the Python API) reuses a healthy server of step 2 and never starts
one by itself: a library call should not leave a process behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from evalduck.flows.local.folder import EPHEMERAL_ENV, STATE_DIR_ENV, ephemeral, project_state_dir, running_here
from evalduck.flows.local.install import (
    DEFAULT_PORT,
    RUNS_ONLY_SERVICES_OFF,
    ServeError,
    ServeState,
    authenticates,
    child_env,
    client_auth,
    ensure_starter,
    ensure_watcher,
    folder_auth,
    forget_state,
    is_alive,
    is_healthy,
    login_hint,
    new_auth,
    prefect_home,
    read_state,
    server_env,
    server_lock,
    start_server,
    stop_server,
    stop_starter,
    ui_url_for,
    wait_healthy,
    write_state,
)
from evalduck.flows.local.warm.wire import starter_refusal
from evalduck.flows.settings import IDLE_TIMEOUT_ENV, idle_timeout

__all__ = (
    "EPHEMERAL_ENV",
    "STATE_DIR_ENV",
    "ephemeral",
    "local_server",
    "project_state_dir",
    "recorded_server",
    "reuse_recorded_server",
    "run_scoped_server",
)

HOST = "127.0.0.1"


def _answers_in_time(api_url: str, tries: int = 3) -> bool:
    """Its health route answers: at once when nothing listens there, after ``tries`` slow tries when it hangs
    (a busy server, e.g. several runs starting at once on a loaded machine, is slow for seconds and must not
    be taken for a hung one and stopped)."""
    return any(is_healthy(api_url, timeout=5.0) for _ in range(tries) if _listening(api_url))


def _listening(api_url: str) -> bool:
    import httpx

    try:
        url = httpx.URL(api_url)
        with socket.create_connection((url.host, url.port or (443 if url.scheme == "https" else 80)), timeout=5.0):
            return True
    except (OSError, ValueError, httpx.InvalidURL):
        return False


def _ours_and_healthy(state: ServeState | None, auth: str | None) -> bool:
    """It answers; and a server evalduck started (a pid recorded) still runs and takes this folder's
    credentials (one that answers without them is not ours, or from before servers had them). Taking them is
    checked first (it answers then: two requests in all); only when that fails do the slower health checks
    tell a busy server, which gets another try, from a hung or dead one."""
    if state is None:
        return False
    if state.server_pid is None:  # a server `evalduck serve` was told to use (PREFECT_API_URL): its own settings
        return _answers_in_time(state.api_url)
    if auth is None or not is_alive(state.server_pid, "server"):
        return False
    return authenticates(state.api_url, auth, 5.0) or (
        _answers_in_time(state.api_url) and authenticates(state.api_url, auth, 10.0))


def recorded_server(state_dir: Path) -> ServeState | None:
    """The server this folder's state file names, when it answers (with its credentials on ``auth`` when
    evalduck started it); None otherwise (never raises)."""
    try:
        state = read_state(state_dir)
        auth = folder_auth(state_dir, create=False)
    except ServeError:
        return None
    if not _ours_and_healthy(state, auth) or state is None:
        return None
    return state.model_copy(update={"auth": auth if state.server_pid is not None else None})


def _free_port(preferred: int = DEFAULT_PORT) -> int:
    """``preferred`` when nothing listens there, else a port the OS picks."""
    for port in (preferred, 0):
        with socket.socket() as probe:
            try:
                probe.bind((HOST, port))
            except OSError:
                continue
            return int(probe.getsockname()[1])
    raise ServeError(f"no free port on {HOST}")


def _clear_stale(state_dir: Path, say: Callable[[str], None]) -> ServeState | None:
    """A record whose server is gone, hung or not ours: stop what is still ours, forget the record.

    The warm starter that forked this very run is kept (stopping it would end this run); returned so that
    the new record names it."""
    try:
        state = read_state(state_dir)
    except ServeError as exc:  # unreadable: nothing of ours can be trusted from it
        say(f"ignoring {state_dir / 'serve.json'}: {exc}")
        state = None
    if state is not None and state.worker_pid is not None and is_alive(state.worker_pid, "worker"):
        return None  # `evalduck serve`'s worker is still there: its record is for `evalduck stop` to end
    mine = state is not None and state.starter_pid == os.getppid()
    if state is not None and state.starter_pid is not None and not mine:
        stop_starter(state.starter_pid)
    if state is not None and state.server_pid is not None and is_alive(state.server_pid, "server"):
        say(stop_server(state.server_pid) + " (it did not answer its health check, or not with this folder's "
            "credentials)")
    forget_state(state_dir)
    return state if mine else None


def local_server(state_dir: Path, say: Callable[[str], None], timeout: float = 180.0) -> ServeState:
    """The folder's local server: the recorded one when it answers, else one started now (with this folder's
    credentials) and recorded; with the folder's warm starter (started too when it is missing), for the runs
    that follow. One process at a time: the first of several runs at once starts it, the others use it."""
    try:
        idle_timeout()  # before anything starts: the watcher started with the server reads it
    except ValueError as exc:
        raise ServeError(str(exc)) from None
    with server_lock(state_dir, timeout + 60):
        state = recorded_server(state_dir)
        if state is not None:
            return ensure_watcher(state_dir, ensure_starter(state_dir, state, after=os.getpid()))
        kept = _clear_stale(state_dir, say)
        say("starting a local Prefect server for this folder (first time: ~30 s)...")  # else a silent wait
        auth = folder_auth(state_dir)
        log = state_dir / "server.log"
        services = {k: v for k, v in RUNS_ONLY_SERVICES_OFF.items() if k not in os.environ}  # a user's setting wins
        state = ServeState(api_url="", ui_url="", project_dir=str(state_dir.parent), services="runs", prefect_home=prefect_home(),
                           starter_pid=kept.starter_pid if kept else None,
                           starter_socket=kept.starter_socket if kept else None, auth=auth)
        # Twice at most: the port found free can be taken before the server binds it (another folder's first
        # run at the same moment), and that server then answers the health check instead of ours.
        for attempt in range(2):
            port = _free_port() if attempt == 0 else _free_port(0)
            api_url = f"http://{HOST}:{port}/api"
            process = start_server(HOST, port, log, {**services, **server_env(auth)}, calm=True)
            state = state.model_copy(update={"api_url": api_url, "ui_url": ui_url_for(api_url), "server_pid": process.pid})
            write_state(state_dir, state)
            # Started now, not after this run: it imports while the server starts (this run only waits for it
            # meanwhile), so that the next run, even one right after this one, is forked from it.
            state = ensure_starter(state_dir, state)
            try:
                wait_healthy(api_url, timeout, process, log)
                if authenticates(api_url, auth, 10.0) and process.poll() is None:
                    break
                if attempt == 1:
                    raise ServeError(f"another server answered at {api_url} instead of this folder's")
                stop_server(process.pid)
            except ServeError:
                stop_server(process.pid)
                if state.starter_pid is not None and not kept:
                    stop_starter(state.starter_pid)
                forget_state(state_dir)
                raise
        state = ensure_watcher(state_dir, state)
    refused = starter_refusal(state_dir) if state.starter_pid is None else None
    starter = (f"; later runs reuse it (no warm starter: {refused})" if refused
               else ", and a warm starter for the next runs; later runs reuse both")
    say(f"Started a local Prefect server for this folder at {state.ui_url} (pid {process.pid}; "
        f"{login_hint(state_dir)}){starter}. {_until()}; --ephemeral runs without them.")
    return state


def _until() -> str:
    """How long the folder's processes stay, in the words of the first run's message."""
    seconds = idle_timeout()
    if seconds == 0:
        return f"They stay until `evalduck stop` ({IDLE_TIMEOUT_ENV}=0)"
    after = f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"
    return (f"They stop by themselves after {after} with no run and no UI request ({IDLE_TIMEOUT_ENV}), "
            "or with `evalduck stop`")


@contextlib.contextmanager
def reuse_recorded_server() -> Iterator[str | None]:
    """For the Python API: within the block Prefect talks to this folder's recorded server when no server
    is configured and it answers; yields its API URL, or None (Prefect's own choice stands)."""
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    state_dir = project_state_dir()
    if get_current_settings().api.url or ephemeral() or not (state_dir / "serve.json").exists():
        yield None
        return
    with running_here(state_dir):  # the folder's idle watcher never stops that server under this run (flows/local/idle.py)
        state = recorded_server(state_dir)
        if state is None:
            yield None
            return
        with temporary_settings(updates={PREFECT_API_URL: state.api_url}), client_auth(state.auth):
            yield state.api_url


def _die_with_parent(parent: int) -> Callable[[], None]:
    """In the child before exec: SIGKILL it when its parent dies, however that parent ends (Linux)."""

    def arm() -> None:
        if sys.platform.startswith("linux"):
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the parent died before the line above
                os._exit(1)

    return arm


def _drain_prefect_workers() -> None:
    """Send the run's last log lines and events before the server goes (Prefect does it at exit, which
    would be after it)."""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=5)


@contextlib.contextmanager
def run_scoped_server(timeout: float = 180.0) -> Iterator[str]:
    """A Prefect API server for one CLI run (CI, --ephemeral), ended with it: Prefect's temporary server,
    started as Prefect starts it but by us, so that it dies with this process even when this process is
    killed (Prefect's own one, orphaned by a killed run, ignored SIGTERM and held its port and database)."""
    port = _free_port(0)
    api_url = f"http://{HOST}:{port}/api"
    auth = new_auth()  # while it runs, other local users cannot use it either
    env = child_env({"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", **server_env(auth)})
    env.pop("PREFECT_API_URL", None)
    with tempfile.TemporaryDirectory(prefix="evalduck-server-") as scratch:
        log = Path(scratch) / "server.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app", "--host", HOST,
                 "--port", str(port), "--log-level", "error", "--lifespan", "on"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                preexec_fn=_die_with_parent(os.getpid()),  # noqa: PLW1509 - no threads of ours run yet
            )
        try:
            wait_healthy(api_url, timeout, process, log)
            with client_auth(auth):
                try:
                    yield api_url
                finally:
                    _drain_prefect_workers()
        finally:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
