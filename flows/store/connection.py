"""Short-lived DuckDB connections that wait (bounded, jittered) for another process's file lock.

DuckDB lets one process at a time open a file (read-write, or read-only by several), and a second
process fails at once with an IOException "Could not set lock on file". Every store operation
therefore opens, works in one transaction, and closes, retrying the open while the lock is held
elsewhere; see docs/schema.md ("Several processes at once") for the measurements behind this.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from evalduck.flows.store.errors import StoreLockedError

__all__ = ("connect", "held", "lock_timeout", "is_lock_error", "lock_holder", "transaction")

_DEFAULT_LOCK_TIMEOUT_S = 60.0
# Write the on-disk format that DuckDB 1.5 can read too: the newest `duckdb` CLI on PyPI (duckdb-cli)
# is 1.5.6, and the point of the stored macros is that the plain CLI can query the file.
_CONFIG = {"storage_compatibility_version": "v1.5.0"}
_FIRST_BACKOFF_S = 0.005
_MAX_BACKOFF_S = 0.1

# One operation at a time per file within a process: DuckDB shares one database instance between a
# process's connections, and the store's delete-then-insert upsert must not interleave with itself.
_process_locks: dict[str, threading.RLock] = {}
_process_locks_guard = threading.Lock()
# Files held open by `held`: path -> the one connection whose cursors `connect` hands out meanwhile.
_held: dict[str, duckdb.DuckDBPyConnection] = {}


def lock_timeout() -> float:
    """Seconds to keep retrying a locked file: `EVALDUCK_DB_LOCK_TIMEOUT`, default 60."""
    raw = os.environ.get("EVALDUCK_DB_LOCK_TIMEOUT")
    if raw is None or raw.strip() == "":
        return _DEFAULT_LOCK_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError as exc:
        raise ValueError(f"EVALDUCK_DB_LOCK_TIMEOUT must be a number of seconds, got {raw!r}") from exc
    if value < 0:
        raise ValueError(f"EVALDUCK_DB_LOCK_TIMEOUT must be >= 0, got {raw!r}")
    return value


def is_lock_error(exc: BaseException) -> bool:
    """True for the error DuckDB raises when another process holds the file."""
    return isinstance(exc, duckdb.IOException) and (
        "Could not set lock" in str(exc) or "Conflicting lock" in str(exc)
    )


_HOLDER = re.compile(r"Conflicting lock is held in (?P<exe>.+?) \(PID (?P<pid>\d+)\)")


def lock_holder(exc: BaseException) -> tuple[int | None, str | None]:
    """(pid, command line) of the process DuckDB names as holding the lock; the command (on one line, cut
    at 80 characters) from /proc when it can be read, else the executable DuckDB names; (None, None) when
    the message names none."""
    found = _HOLDER.search(str(exc))
    if found is None:
        return None, None
    pid = int(found.group("pid"))
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        raw = b""
    command = " ".join(" ".join(part.decode("utf-8", "replace").split()) for part in raw.split(b"\0") if part)
    return pid, _shorten(command or found.group("exe"))


def _process_lock(path: Path) -> threading.RLock:
    key = str(path)
    with _process_locks_guard:
        lock = _process_locks.get(key)
        if lock is None:
            lock = _process_locks[key] = threading.RLock()
        return lock


def _open(path: Path, read_only: bool, timeout: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + timeout
    backoff = _FIRST_BACKOFF_S
    attempts = 0
    while True:
        attempts += 1
        try:
            return duckdb.connect(str(path), read_only=read_only, config=_CONFIG)
        except duckdb.IOException as exc:
            if not is_lock_error(exc):
                raise
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pid, command = lock_holder(exc)
                who = f"pid {pid} ({command})" if pid is not None else "another process"
                raise StoreLockedError(
                    f"{path}: {who} held the DuckDB file lock for more than {timeout:g} s ({attempts} attempts). "
                    "Close long-lived sessions on this file (an open `duckdb` shell holds it; `evalduck sql` "
                    "queries wait their turn), or raise EVALDUCK_DB_LOCK_TIMEOUT."
                    + ("" if pid is not None else f" DuckDB said: {exc}"),
                    path=path, timeout=timeout, holder_pid=pid, holder=command,
                ) from exc
            # Full jitter: waiting processes spread out instead of retrying in lockstep.
            time.sleep(min(remaining, random.uniform(0, backoff)))
            backoff = min(backoff * 2, _MAX_BACKOFF_S)


def _shorten(command: str, limit: int = 80) -> str:
    return command if len(command) <= limit else command[: limit - 1] + "…"


@contextmanager
def connect(path: Path, *, read_only: bool = False, timeout: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection held only for the `with` block; waits up to `timeout` s (default `lock_timeout()`).
    Inside `held(path)`: a cursor of the held connection (read-write, whatever `read_only` says)."""
    with _process_lock(path):
        anchor = _held.get(str(path))
        con = anchor.cursor() if anchor is not None else _open(path, read_only, lock_timeout() if timeout is None else timeout)
        try:
            yield con
        finally:
            con.close()


@contextmanager
def held(path: Path, *, timeout: float | None = None) -> Iterator[None]:
    """The file opened once for a burst of this process's own operations (a run's start or end): each `connect`
    inside the block is a cursor of one read-write connection, so the burst pays one open (DuckDB's instance
    start-up: docs/benchmarks-history.md, 'A run's start and end on one opening of the results file') and one
    checkpoint instead of one per operation. Other processes wait for the whole block, so never hold a file for
    longer than such a burst, nor around a user's SQL (a read-only `connect` inside the block can write).
    Nested blocks share the outer one's connection."""
    key = str(path)
    with _process_lock(path):
        nested = key in _held
        if not nested:
            _held[key] = _open(path, False, lock_timeout() if timeout is None else timeout)
    if nested:
        yield
        return
    try:
        yield
    finally:
        with _process_lock(path):
            _held.pop(key).close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """One explicit transaction: committed when the block ends, rolled back when it raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    try:
        con.execute("COMMIT")
    except duckdb.Error:
        try:  # a shared store's commit can fail on a conflict; leave the connection usable
            con.execute("ROLLBACK")
        except duckdb.Error:
            pass
        raise
