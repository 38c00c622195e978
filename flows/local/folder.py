"""Where a project folder keeps its local state, and whether a run is ephemeral: read by the thin `evalduck`
entry point before anything heavy is imported, so this module imports only the standard library."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from evalduck.flows.project.root import project_root

__all__ = (
    "EPHEMERAL_ENV", "STATE_DIR_ENV", "STATE_FILE", "ephemeral", "project_state_dir", "last_run_at", "no_run_starts", "run_going",
    "running_here",
)

EPHEMERAL_ENV = "EVALDUCK_EPHEMERAL"
STATE_DIR_ENV = "EVALDUCK_STATE_DIR"
STATE_FILE = "serve.json"
RUN_LOCK = "runs.lock"  # held shared by every run of this folder while it goes (``running_here``)


def ephemeral(flag: bool = False) -> bool:
    """Whether a run uses a temporary server of its own: ``--ephemeral``, EVALDUCK_EPHEMERAL=1, or CI set."""
    value = os.environ.get(EPHEMERAL_ENV, "").strip().lower()
    return flag or value in {"1", "true", "yes"} or bool(os.environ.get("CI"))


def project_state_dir(project: Path | None = None) -> Path:
    """``$EVALDUCK_STATE_DIR``, else ``.evalduck`` in the project folder: the project root found from the
    working directory (flows/project/root.py), the working directory itself outside a project."""
    configured = os.environ.get(STATE_DIR_ENV)
    return Path(configured).resolve() if configured else (project or project_root()).resolve() / ".evalduck"


@contextlib.contextmanager
def running_here(state_dir: Path, wait_s: float = 60.0) -> Iterator[None]:
    """Around a run of this folder (in its own process, forked by the warm starter, or ``run_evals`` on the
    folder's server): the folder's run lock held shared while it goes, its mtime stamped at the start and the
    end. The idle watcher (flows/local/idle.py) never stops the folder's processes while a run holds it, and holds it
    exclusively while it stops them: a run starting then waits (a few seconds, at most ``wait_s``), then finds
    the folder stopped and starts it afresh."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(state_dir / RUN_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:  # a read-only folder: nothing to tell the watcher
        yield
        return
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    break  # run anyway: a stuck watcher must not keep runs from running
                time.sleep(0.05)
        _stamp(fd)
        yield
    finally:
        _stamp(fd)
        os.close(fd)


def _stamp(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.utime(fd)


def run_going(state_dir: Path) -> bool:
    """Whether a run of this folder holds its run lock now (``running_here``)."""
    try:
        fd = os.open(state_dir / RUN_LOCK, os.O_RDWR)  # not made here: its mtime says when a run last came
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def last_run_at(state_dir: Path) -> float:
    """When a run of this folder last started or ended (epoch seconds; 0 when none ever did)."""
    try:
        return (state_dir / RUN_LOCK).stat().st_mtime
    except OSError:
        return 0.0


@contextlib.contextmanager
def no_run_starts(state_dir: Path) -> Iterator[bool]:
    """The run lock held exclusively: yields False (and holds nothing) when a run holds it."""
    fd = os.open(state_dir / RUN_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
