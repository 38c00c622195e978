"""What runs for a folder, for `evalduck status`: each recorded process with its memory, the server's URL, and
how long until the idle watcher stops them (flows/local/idle.py). Reads the record and the status files the starter
and the watcher write; asks no process anything."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from evalduck.flows.local.idle import MARKER as WATCHER_MARKER
from evalduck.flows.local.idle import idle_status
from evalduck.flows.local.install.state import ServeState, read_state
from evalduck.flows.local.install.stopping import is_alive
from evalduck.flows.local.warm.wire import MARKER as STARTER_MARKER
from evalduck.flows.local.warm.wire import starter_status

__all__ = ("Process", "FolderStatus", "folder_status", "rss_mb", "duration")


@dataclass
class Process:
    """One recorded process of a folder: its role, pid and resident memory (None: not running)."""

    role: str
    pid: int
    rss_mb: float | None  # None: not running
    note: str = ""


@dataclass
class FolderStatus:
    """What `evalduck status` shows of a folder: its recorded state and its processes."""

    state: ServeState | None
    processes: list[Process]
    idle_line: str


def rss_mb(pid: int) -> float | None:
    """Resident memory (VmRSS) in MB; None when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``2.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _process(role: str, pid: int | None, marker: str, note: str = "") -> Process | None:
    if pid is None:
        return None
    alive = is_alive(pid, marker)
    return Process(role, pid, rss_mb(pid) if alive else None, note if alive else "not running")


def folder_status(state_dir: Path) -> FolderStatus:
    """The folder's state and each recorded process, alive or not (read only: nothing is started or stopped)."""
    state = read_state(state_dir)
    if state is None:
        return FolderStatus(None, [], "")
    warm = starter_status(state_dir) or {}
    idle = idle_status(state_dir) or {}
    phase = warm.get("phase") if warm.get("pid") == state.starter_pid else None
    renderer = warm.get("renderer_pid") if phase == "listening" else None
    found = [
        _process("server", state.server_pid, "server", state.ui_url),
        _process("starter", state.starter_pid, STARTER_MARKER, str(phase or "")),
        _process("renderer", renderer if isinstance(renderer, int) else None, STARTER_MARKER, "charts of forked runs"),
        _process("worker", state.worker_pid, "worker", f"pool {state.work_pool}"),
        _process("watcher", state.watcher_pid, WATCHER_MARKER),
    ]
    processes = [p for p in found if p is not None]
    return FolderStatus(state, processes, _idle_line(state, idle))


def _idle_line(state: ServeState, idle: dict[str, object]) -> str:
    if state.worker_pid is not None:
        return "served by `evalduck serve`: never stopped as idle (`evalduck stop` ends it)"
    if state.server_pid is None:
        return f"the Prefect server at {state.api_url} is not evalduck's: never stopped"
    if state.watcher_pid is None or not is_alive(state.watcher_pid, WATCHER_MARKER):
        return "no idle watcher (EVALDUCK_IDLE_TIMEOUT=0, or it ended): they run until `evalduck stop`"
    last, timeout = idle.get("last_active"), idle.get("timeout_s")
    if idle.get("pid") != state.watcher_pid or not isinstance(last, (int, float)) or not isinstance(timeout, (int, float)):
        return "idle watcher starting"
    idle_s = max(0.0, time.time() - last)
    left = max(0.0, timeout - idle_s)
    return (f"idle for {duration(idle_s)}; stopped by the idle watcher in {duration(left)} with no run and no "
            f"request (EVALDUCK_IDLE_TIMEOUT={timeout:g} s)")
