"""Where a project folder keeps its local state, and whether a run is ephemeral: read by the thin `evalduck`
entry point before anything heavy is imported, so this module imports only the standard library."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from evalduck.flows.project import project_root

__all__ = (
    "EPHEMERAL_ENV", "STATE_DIR_ENV", "STATE_FILE", "ephemeral", "project_state_dir", "running_here", "wait_until_quiet",
)

EPHEMERAL_ENV = "EVALDUCK_EPHEMERAL"
STATE_DIR_ENV = "EVALDUCK_STATE_DIR"
STATE_FILE = "serve.json"
RUN_LOCK = "runs.lock"  # held shared by every run of this folder that runs in its own process


def ephemeral(flag: bool = False) -> bool:
    """Whether a run uses a temporary server of its own: ``--ephemeral``, EVALDUCK_EPHEMERAL=1, or CI set."""
    value = os.environ.get(EPHEMERAL_ENV, "").strip().lower()
    return flag or value in {"1", "true", "yes"} or bool(os.environ.get("CI"))


def project_state_dir(project: Path | None = None) -> Path:
    """``$EVALDUCK_STATE_DIR``, else ``.evalduck`` in the project folder: the project root found from the
    working directory (flows/project.py), the working directory itself outside a project."""
    configured = os.environ.get(STATE_DIR_ENV)
    return Path(configured).resolve() if configured else (project or project_root()).resolve() / ".evalduck"


@contextlib.contextmanager
def running_here(state_dir: Path) -> Iterator[None]:
    """Around a run in its own process (not forked by the warm starter): a shared lock on the folder's run
    lock, so that the starter leaves its preloads (seconds of CPU) until no such run is going."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(state_dir / RUN_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:  # a read-only folder: nothing to tell the starter
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def wait_until_quiet(state_dir: Path, quiet_s: float = 1.5, poll_s: float = 0.25, limit_s: float = 3600.0) -> bool:
    """Until no run of this folder has run in its own process for ``quiet_s`` (scripted runs back to back
    never leave such a gap, so they never share the machine with the starter's preloads); False when
    ``limit_s`` passed first."""
    path = state_dir / RUN_LOCK
    deadline = time.monotonic() + limit_s
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a run holds it
            quiet_since = time.monotonic()
        finally:
            os.close(fd)
        if time.monotonic() - quiet_since >= quiet_s:
            return True
        time.sleep(poll_s)
    return False
