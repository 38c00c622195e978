"""Which process writes a run, and whether it is still alive: what tells a killed run from a running one.

A run records its writer (pid, host name and, on Linux, a start token: boot id, pid namespace and the
process's start time in clock ticks) when it starts or resumes. A `running` run whose writer is gone
was killed; the store marks it `interrupted` the next time the file is opened. The start token guards
against a reused pid; the namespace part keeps one container from judging another's processes.
When the answer cannot be known (another host or pid namespace, an old run without a writer) the run is
left as it is.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

import duckdb

from evalduck.flows.store.connection import transaction

__all__ = ("Writer", "this_writer", "writer_alive", "gone_writers", "mark_interrupted_runs")

_PROC = Path("/proc")


@dataclass(frozen=True)
class Writer:
    """The process that writes a run: as stored in `runs.writer_pid`, `writer_host`, `writer_token`."""

    pid: int
    host: str
    token: str | None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks) of a process from /proc, None when there is no such process."""
    text = _read(_PROC / str(pid) / "stat")
    if not text or ")" not in text:
        return None
    fields = text.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces and parentheses
    return (fields[0], fields[19]) if len(fields) > 19 else None


def _namespace() -> str | None:
    """Boot id and pid namespace of this process, joined by '/', on Linux; None elsewhere."""
    boot = _read(_PROC / "sys/kernel/random/boot_id")
    try:
        pidns = os.readlink(_PROC / "self/ns/pid")
    except OSError:
        return None
    return f"{boot}/{pidns}" if boot else None


def this_writer() -> Writer:
    """This process, as a run's writer."""
    pid = os.getpid()
    space, stat = _namespace(), _stat(pid)
    return Writer(pid=pid, host=socket.gethostname(), token=f"{space}/{stat[1]}" if space and stat else None)


def writer_alive(pid: int, host: str | None, token: str | None) -> bool | None:
    """True if the writer still runs, False if it is certainly gone, None when this process cannot tell."""
    if pid <= 0 or host != socket.gethostname():
        return None
    if token:
        boot, pidns, start = (token.split("/") + ["", "", ""])[:3]
        mine = _namespace()
        if mine is None:
            return None
        my_boot, my_pidns = mine.split("/", 1)
        if boot != my_boot:  # the machine has restarted since: every process of then is gone
            return False
        if pidns != my_pidns:
            return None
        stat = _stat(pid)
        return stat is not None and stat[0] != "Z" and stat[1] == start  # a zombie or a reused pid is gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process, alive
        return True
    return True


def gone_writers(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The `running` runs whose writer process is certainly gone (reads only)."""
    running = con.execute(
        "SELECT run_id, writer_pid, writer_host, writer_token FROM runs WHERE status = 'running' AND writer_pid IS NOT NULL"
    ).fetchall()
    return [run_id for run_id, pid, host, token in running if writer_alive(pid, host, token) is False]


def mark_interrupted_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Inside an open read-write connection (no other process can change `runs` meanwhile)."""
    gone = gone_writers(con)
    if gone:
        with transaction(con):  # its end is taken as its last stored cell (or its start)
            con.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = coalesce("
                "(SELECT max(created_at) FROM scores WHERE scores.run_id = runs.run_id), started_at) "
                "WHERE status = 'running' AND run_id IN (SELECT unnest(?::VARCHAR[]))",
                [gone],
            )
    return gone
