"""The processes evalduck starts for a folder (Prefect server, warm starter, idle watcher, worker): start them,
each in a session of its own, and wait for the server's health (stopping them: stopping.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

from evalduck.flows.local.install.state import (
    QUIET_ENV,
    WORK_POOL,
    ServeError,
    ServeState,
    child_env,
    prefect_executable,
    write_state,
)
from evalduck.flows.local.install.stopping import is_alive

__all__ = (
    "is_healthy",
    "answers",
    "wait_healthy",
    "start_server",
    "start_starter",
    "ensure_starter",
    "start_watcher",
    "ensure_watcher",
    "start_worker",
    "log_tail",
)


def is_healthy(api_url: str, timeout: float = 2.0) -> bool:
    """True when `GET {api_url}/health` answers; the route stays open when basic auth is on."""
    try:
        return httpx.get(f"{api_url}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def answers(api_url: str, timeout: float = 5.0) -> bool:
    """True when anything answers HTTP at `api_url` (a server behind a proxy that wants credentials for its
    health route too); False when nothing listens there or it does not answer within `timeout`."""
    try:
        httpx.get(f"{api_url.rstrip('/')}/health", timeout=timeout)
    except httpx.HTTPError:
        return False
    return True


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


def start_server(
    host: str, port: int, log: Path, env: Mapping[str, str] | None = None, calm: bool = False
) -> subprocess.Popen[bytes]:
    """Start `prefect server start` in its own process group, detached from our terminal; ``calm``: with its
    background worker polling every 2 s instead of 250 ms (flows/local/install/calm_server.py), for a server a run
    starts.

    PREFECT_SERVER_API_HOST/PORT are set as well as the flags: the UI asks `/ui-settings` for its API URL,
    and without them that answer stays on 127.0.0.1:4200 whatever port the server listens on.
    """
    command = [sys.executable, "-m", "evalduck.flows.local.install.calm_server"] if calm else [prefect_executable()]
    server_env = child_env({"PREFECT_SERVER_API_HOST": host, "PREFECT_SERVER_API_PORT": str(port), **(env or {})})
    server_env.pop("PREFECT_API_URL", None)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            [*command, "server", "start", "--host", host, "--port", str(port)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=server_env, start_new_session=True,
        )


def start_starter(
    state_dir: Path, env: Mapping[str, str] | None = None, after: int | None = None
) -> subprocess.Popen[bytes]:
    """Start the folder's warm starter in a session of its own; it logs to ``warm.log`` in ``state_dir``
    and, given ``after`` (a run's pid), imports its preloads only once that run has ended.

    Its environment is this process's (plus ``env``) scrubbed of keys and credentials (caller.starter_env):
    it serves many runs, each of which sends its own; the variables fixed at its start (PYTHONPATH...) are
    the ones a run must share to be forked from it (flows/local/warm/caller.py)."""
    from evalduck.flows.local.warm.caller import starter_env as scrubbed
    from evalduck.flows.local.warm.wire import MARKER

    log = state_dir / "warm.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    starter_env = scrubbed({**os.environ, **QUIET_ENV, **(env or {})})
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-P", "-m", MARKER, str(state_dir), *(["--after", str(after)] if after else [])],
            stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, env=starter_env, start_new_session=True,
        )


def ensure_starter(
    state_dir: Path, state: ServeState, env: Mapping[str, str] | None = None, after: int | None = None
) -> ServeState:
    """``state`` with a live warm starter: the recorded one, else one started now (and recorded); none off
    Linux or when its sockets' folder is not only this user's (wire.starter_refusal: the runs go in their
    own processes, and say why)."""
    from evalduck.flows.local.warm.wire import MARKER, SUPPORTED, socket_path, starter_refusal

    if state.starter_pid is not None and is_alive(state.starter_pid, MARKER):
        return state
    if starter_refusal(state_dir) is not None:  # the socket is recorded: a run checks its folder and says why
        state = state.model_copy(update={"starter_pid": None,
                                         "starter_socket": str(socket_path(state_dir)) if SUPPORTED else None})
        write_state(state_dir, state)
        return state
    process = start_starter(state_dir, env, after)
    state = state.model_copy(update={"starter_pid": process.pid, "starter_socket": str(socket_path(state_dir))})
    write_state(state_dir, state)
    return state


def start_watcher(state_dir: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes] | None:
    """Start the folder's idle watcher (flows/local/idle.py) in a session of its own, logging to ``idle.log``;
    None when EVALDUCK_IDLE_TIMEOUT is 0 (the folder's processes stay until `evalduck stop`)."""
    from evalduck.flows.local.idle import MARKER

    watcher_env = {**os.environ, **QUIET_ENV, **(env or {})}
    if _idle_timeout(watcher_env) == 0:
        return None
    log = state_dir / "idle.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-P", "-m", MARKER, str(state_dir)], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, env=watcher_env, start_new_session=True,
        )


def _idle_timeout(env: Mapping[str, str]) -> float:
    """EVALDUCK_IDLE_TIMEOUT as ``env`` has it; ServeError naming the variable and the value when it is not one."""
    from evalduck.flows.settings import idle_timeout

    try:
        return idle_timeout(env)
    except ValueError as exc:
        raise ServeError(str(exc)) from None


def ensure_watcher(state_dir: Path, state: ServeState, env: Mapping[str, str] | None = None) -> ServeState:
    """``state`` with a live idle watcher, for a server evalduck started for a run (`evalduck serve`'s folders
    are not stopped as idle): the recorded one, else one started now (and recorded)."""
    from evalduck.flows.local.idle import MARKER

    if state.server_pid is None or state.worker_pid is not None:
        return state
    if state.watcher_pid is not None and is_alive(state.watcher_pid, MARKER):
        return state
    process = start_watcher(state_dir, env)
    state = state.model_copy(update={"watcher_pid": process.pid if process else None})
    write_state(state_dir, state)
    return state


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


def log_tail(log: Path | None, lines: int = 15) -> str:
    """The last ``lines`` of ``log``, for an error that says why a process ended ("" without one)."""
    if log is None or not log.exists():
        return ""
    tail = log.read_text(errors="replace").splitlines()[-lines:]
    return f"; last lines of {log}:\n" + "\n".join(tail)
