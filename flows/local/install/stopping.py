"""Recognise a process evalduck recorded for a folder (server, warm starter, worker, idle watcher) by its pid
and the marker in its command line, and stop it: signals in turn until it is gone, SIGKILL last.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ("is_alive", "stop_server", "stop_starter", "stop_watcher", "stop_worker")


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


def stop_starter(pid: int) -> str:
    """SIGTERM (it ends at once; the runs it forked die with it), SIGKILL after 5 s."""
    from evalduck.flows.local.warm.wire import MARKER

    if not is_alive(pid, MARKER):
        return f"the warm starter (pid {pid}) was not running"
    return _escalate(pid, "the warm starter", [(lambda: _signal_group(pid, signal.SIGTERM), 5.0, "")])


def stop_watcher(pid: int) -> str:
    """SIGTERM (it holds nothing it must release), SIGKILL after 5 s; never this process."""
    from evalduck.flows.local.idle import MARKER

    if pid == os.getpid() or not is_alive(pid, MARKER):
        return f"the idle watcher (pid {pid}) was not running"
    return _escalate(pid, "the idle watcher", [(lambda: _signal_group(pid, signal.SIGTERM), 5.0, "")])
