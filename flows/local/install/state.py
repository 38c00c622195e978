"""What `serve` and the folder's server record (the state file), and the environment and paths of what they start."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from evalduck.errors import EvalduckError

__all__ = (
    "WORK_POOL",
    "DEFAULT_PORT",
    "QUIET_ENV",
    "RUNS_ONLY_SERVICES_OFF",
    "ServeError",
    "ServeState",
    "state_path",
    "read_state",
    "write_state",
    "forget_state",
    "server_lock",
    "prefect_executable",
    "prefect_home",
    "configured_api_url",
    "child_env",
)

WORK_POOL = "evalduck-pool"
DEFAULT_PORT = 4200
# Variables every process we start gets: no telemetry, no price-list download, no stray bytecode in the project.
QUIET_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "PYTHONDONTWRITEBYTECODE": "1",
}


# The Prefect server services a server started for `evalduck run` alone turns off (Prefect 3.9's setting names):
# a folder without deployments has no schedules (scheduler, late runs), workers (foreman, worker cleanup
# leases), automations (triggers), pauses, concurrency leases (repossessor) or cancelled runs to clean up
# after a worker. Each wakes on its own interval, and together they cost an idle server CPU (docs/benchmarks-history.md,
# 'A folder's background processes: idle footprint and back-to-back runs (A/B, 2026-12-03, issue 24 item 5)'). Kept:
# the task run recorder and the event persister (the UI's task runs and events) and the hourly event vacuum.
# `evalduck serve` starts its server with all of them (it replaces a run's server that lacks them).
RUNS_ONLY_SERVICES_OFF = {
    f"PREFECT_SERVER_SERVICES_{name}_ENABLED": "false"
    for name in ("SCHEDULER", "LATE_RUNS", "FOREMAN", "CANCELLATION_CLEANUP", "PAUSE_EXPIRATIONS", "REPOSSESSOR",
                 "CLEANUP_RECONCILER", "TRIGGERS")
}


class ServeError(EvalduckError, RuntimeError):
    """A step of `serve` failed; the message says which and where its log is."""


class ServeState(BaseModel):
    """What `serve` started, written to the state file so that `stop` ends exactly that."""

    api_url: str
    ui_url: str
    server_pid: int | None = Field(None, description="None when an already running server was reused")
    worker_pid: int | None = None
    starter_pid: int | None = Field(None, description="the warm starter's (flows/local/warm/starter.py)")
    starter_socket: str | None = Field(None, description="the unix socket the warm starter listens on")
    watcher_pid: int | None = Field(None, description="the idle watcher's (flows/local/idle.py), for a server a run started")
    services: str = Field("all", description='"runs": a server a run started, without the services deployments '
                          'need (RUNS_ONLY_SERVICES_OFF); "all": every service (`evalduck serve`, older records)')
    work_pool: str = WORK_POOL
    db_path: str | None = Field(None, description="the worker's results file; None for a server `run` started")
    project_dir: str
    prefect_home: str | None = Field(None, description="the server's PREFECT_HOME (its database)")
    started_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    auth: str | None = Field(None, exclude=True, repr=False, description="the basic auth its clients send, when "
                             "evalduck started it (flows/local/install/credentials.py); never written to the file")


def state_path(state_dir: Path) -> Path:
    """The folder's state file: what evalduck started for it, by process id."""
    return state_dir / "serve.json"


def read_state(state_dir: Path) -> ServeState | None:
    """The folder's recorded state, or None when nothing was recorded; ServeError naming a file that is not one."""
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
    """Written whole (a temporary file renamed over it): a reader never sees half a record."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_path(state_dir)
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    text = state.model_dump_json(indent=2) + "\n"
    scratch.write_text(text)
    os.replace(scratch, path)
    from evalduck.flows.local.install.folders import register

    register(state_dir, text)  # for `evalduck stop --all` (flows/local/install/folders.py)


def forget_state(state_dir: Path) -> None:
    """Remove the record (and its copy in this user's registry of folders)."""
    from evalduck.flows.local.install.folders import unregister

    state_path(state_dir).unlink(missing_ok=True)
    unregister(state_dir)


@contextlib.contextmanager
def server_lock(state_dir: Path, timeout: float) -> Iterator[None]:
    """Around choosing or starting the folder's server: one process at a time (``server.lock`` in the state
    folder), so that of several first runs at once one starts the server and the others wait for it and
    use it; ServeError after ``timeout`` seconds of waiting."""
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(state_dir / "server.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ServeError(f"another evalduck process held {state_dir / 'server.lock'} for over "
                                     f"{timeout:.0f} s (starting this folder's Prefect server?)") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


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
    """The environment of a process evalduck starts: this one's, quietened (QUIET_ENV), plus ``extra``."""
    env = {**os.environ, **QUIET_ENV}
    env.update(extra or {})
    return env


# --- the server -------------------------------------------------------------------------------------------
