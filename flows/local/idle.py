"""The folder's idle watcher: after ``EVALDUCK_IDLE_TIMEOUT`` seconds (flows/settings.py) with no run and no
request to the server, it stops the folder's Prefect server, warm starter and chart renderer and removes them
from the folder's state, so nothing of evalduck's stays behind on a machine nobody runs evals on any more.

One process per folder, started with the folder's server (flows/local/server.py) as
``python -P -m evalduck.flows.local.idle STATE_DIR`` and recorded in the state file; standard library only until it
stops something, so it holds little memory (docs/benchmarks-history.md, 'A folder's background processes').
Every few seconds it looks at:

- runs: every `evalduck run` of the folder (forked by the starter or in its own process) and every
  ``run_evals`` on the folder's server holds the folder's run lock while it goes and stamps its mtime at its
  start and end (flows/local/folder.py ``running_here``). A held lock is activity however long the run takes, so a
  run is never stopped under; the mtime catches a run that began and ended between two looks.
- requests: any TCP connection to or from the server's port (/proc/net/tcp, tcp6) that is open, or closed
  since the last look (a closed one stays in TIME_WAIT for 60 s, longer than any poll interval, so a request
  is seen whenever it came): the UI in a browser, the Prefect CLI, a script. The watcher never connects.

A folder that `evalduck serve` serves (a worker recorded: schedules and UI runs come at any time) is never
stopped: the watcher leaves, as it does when `evalduck stop` or a newer record replaced it. When the timeout
passes it takes the folder's server lock and its run lock exclusively (a run starting meanwhile waits for it,
then finds nothing and starts afresh), looks once more, stops everything the record names (flows/server
``stop``: the starter, whose renderer dies with it, then the server), removes the record and its own status
file (``idle.json``: when it last saw activity, for `evalduck status`) and exits. It exits too, cleaning up
the same way, when the server died under it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evalduck.flows.local.folder import STATE_FILE, last_run_at, no_run_starts, run_going
from evalduck.flows.settings import idle_timeout

__all__ = ("MARKER", "STATUS_FILE", "connections", "idle_status", "main", "poll_interval")

MARKER = "evalduck.flows.local.idle"  # in the watcher's command line: how a recorded pid is recognised as ours
STATUS_FILE = "idle.json"
_LISTEN, _TIME_WAIT = "0A", "06"  # the state column of /proc/net/tcp


def poll_interval(timeout_s: float) -> float:
    """How often it looks: a tenth of the timeout, between 0.5 and 10 s (each look reads /proc/net/tcp, whose CPU
    grows with the machine's sockets: docs/benchmarks-history.md, 'A folder's background processes'; a closed
    connection stays visible for 60 s)."""
    return min(10.0, max(0.5, timeout_s / 10))


def connections(port: int) -> set[tuple[str, str, str]]:
    """TCP sockets of this machine, other than listening ones, with ``port`` at either end: (state, local
    address, remote address), as /proc/net/tcp and tcp6 write them."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] != _LISTEN and port in (
                    int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16)):
                found.add((fields[3], fields[1], fields[2]))
    return found


def idle_status(state_dir: Path) -> dict[str, Any] | None:
    """The watcher's status file: its pid, timeout and when it last saw activity (None when there is none)."""
    try:
        status = json.loads((state_dir / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) else None


def _record(state_dir: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((state_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _write_status(state_dir: Path, timeout_s: float, last_active: float) -> None:
    path = state_dir / STATUS_FILE
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    scratch.write_text(json.dumps({"pid": os.getpid(), "timeout_s": timeout_s, "last_active": last_active}) + "\n")
    os.replace(scratch, path)


def _log(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} idle watcher {os.getpid()}: {line}", file=sys.stderr, flush=True)


class Watcher:
    def __init__(self, state_dir: Path, timeout_s: float) -> None:
        self.state_dir = state_dir
        self.timeout_s = timeout_s
        self.last_active = time.time()
        self.written = 0.0
        self.closed: set[tuple[str, str, str]] = set()  # the TIME_WAIT connections of the last look

    def mine(self) -> dict[str, Any] | None:
        """The folder's record while it is still this watcher's to act on; None once it is not."""
        record = _record(self.state_dir)
        if record is None or record.get("watcher_pid") != os.getpid():
            return None
        if _alive(record.get("worker_pid")):  # `evalduck serve` serves the folder: `evalduck stop` ends it
            return None
        return record

    def busy(self, record: dict[str, Any], lock: bool = True) -> bool:
        """Activity now: a run holds the run lock (looked at unless ``lock`` is false: this process holds it),
        or a connection to the server's port is open or closing. Also moves ``last_active`` to the last run's
        start or end."""
        self.last_active = max(self.last_active, last_run_at(self.state_dir))
        port = urlsplit(str(record.get("api_url", ""))).port
        found = connections(port) if port is not None else set()
        closed = {c for c in found if c[0] == _TIME_WAIT}
        # A closed connection stays in TIME_WAIT for 60 s: activity when it is new since the last look only.
        requests = len(found) > len(closed) or bool(closed - self.closed)
        self.closed = closed
        return (lock and run_going(self.state_dir)) or requests

    def look(self) -> str | None:
        """One look: why it should leave now ("gone", "idle", "server died"), or None to keep watching."""
        record = self.mine()
        if record is None:
            return "gone"
        if not _alive(record.get("server_pid")):
            return "server died"
        now = time.time()
        if self.busy(record):
            self.last_active = now
        if self.last_active != self.written:
            _write_status(self.state_dir, self.timeout_s, self.last_active)
            self.written = self.last_active
        return "idle" if now - self.last_active >= self.timeout_s else None

    def stop_folder(self, why: str) -> bool:
        """Stop what the record names, unless a run or a request came meanwhile (False then)."""
        from evalduck.flows.local.install import ServeError, server_lock, stop

        try:
            with server_lock(self.state_dir, 0.5), no_run_starts(self.state_dir) as quiet:
                record = self.mine()
                if record is None:
                    return True
                if why == "idle" and (not quiet or self.busy(record, lock=False) or time.time() - self.last_active < self.timeout_s):
                    self.last_active = time.time()
                    return False
                _log(f"stopping the folder's processes: {why}")
                stop(self.state_dir, say=_log)
                return True
        except ServeError:  # another process chooses or starts the folder's server right now: activity
            self.last_active = time.time()
            return False

    def watch(self) -> None:
        interval = poll_interval(self.timeout_s)
        _log(f"watching {self.state_dir}: stops the folder's server, starter and renderer after "
             f"{self.timeout_s:g} s with no run and no request")
        while True:
            why = self.look()
            if why == "gone":
                _log("the folder's record is not this watcher's any more (stopped, or served by `evalduck serve`)")
                return
            if why is not None and self.stop_folder(why):
                return
            time.sleep(interval)


def main(argv: list[str] | None = None) -> None:
    """``python -m evalduck.flows.local.idle STATE_DIR``: watch until idle, then stop; exit 2 on a bad timeout."""
    args = sys.argv[1:] if argv is None else argv
    state_dir = Path(args[0]).resolve()
    try:
        timeout_s = idle_timeout()
    except ValueError as exc:
        _log(f"not watching: {exc}")
        sys.exit(2)
    try:
        Watcher(state_dir, timeout_s).watch()
    finally:
        status = idle_status(state_dir)
        if status is not None and status.get("pid") == os.getpid():
            (state_dir / STATUS_FILE).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
