"""The shared store: a DuckLake (PostgreSQL catalog, Parquet data) that processes on many machines write at once.

DuckDB extensions are locked to their exact DuckDB version and PyPI carries them (as wheels) for DuckDB
1.5.5 only, so the shared store needs `evalduck[shared]`, which pins duckdb 1.5.5 (docs/scale-out.md).
The wheels' files are copied into DuckDB's extension folder (`~/.duckdb/extensions`), where the plain
`duckdb` 1.5.5 shell finds them too.

Attaching takes catalog round trips (docs/benchmarks-history.md, 'Shared store'), so each process keeps one
connection per lake and gives each operation its own cursor. DuckLake has no PRIMARY KEY or UNIQUE constraint;
exactly-once cells come from its optimistic concurrency instead: every write transaction also updates the one row
of `evalduck_write_token`, so two overlapping writes always conflict at commit, the later one is rolled back, and
`retry_conflicts` runs it again from the start, where its delete-then-insert upsert sees what the other wrote.
Writes are thereby serialised (one commit at a time), which is what makes the upsert exactly-once.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import duckdb

from evalduck.flows.store.errors import StoreError
from evalduck.flows.store.target import StoreTarget

__all__ = ("session", "retry_conflicts", "is_conflict", "touch_write_token", "ensure_write_token", "LAKE_ALIAS")

LAKE_ALIAS = "evalduck"
TOKEN_TABLE = "evalduck_write_token"
_EXTENSIONS = {"ducklake": "duckdb_extension_ducklake", "postgres_scanner": "duckdb_extension_postgres"}
_MAX_CONFLICT_WAIT_S = 120.0
_ATTACH_ATTEMPTS = 5
_sessions: dict[tuple[int, str], duckdb.DuckDBPyConnection] = {}
_sessions_guard = threading.Lock()
T = TypeVar("T")


def _install_extensions() -> None:
    """Copy the extension wheels' files into DuckDB's extension folder (once per machine and version)."""
    version = duckdb.__version__
    missing = []
    sources: dict[str, Path] = {}
    for name, module in _EXTENSIONS.items():
        try:
            package = __import__(module)
        except ImportError:
            missing.append(module.replace("_", "-"))
            continue
        folder = Path(package.__file__).parent / "extensions" / f"v{version}"
        found = sorted(folder.glob("*.duckdb_extension")) if folder.is_dir() else []
        if not found:
            raise StoreError(
                f"{package.__file__}: {module} holds no extension for DuckDB {version}; the shared store needs "
                "duckdb==1.5.5 with the matching extension wheels: pip install 'evalduck[shared]'"
            )
        sources[name] = found[0]
    if missing:
        raise StoreError(
            f"the shared store (ducklake:) needs {', '.join(missing)} for DuckDB {version}, which this Python "
            f"({sys.executable}) lacks: pip install 'evalduck[shared]' (pins duckdb 1.5.5, the version PyPI "
            "carries the extensions for; docs/scale-out.md)"
        )
    platform = duckdb.execute("PRAGMA platform").fetchone()[0]  # type: ignore[index]
    target_dir = Path(extension_directory()) / f"v{version}" / platform
    target_dir.mkdir(parents=True, exist_ok=True)
    for name, source in sources.items():
        dest = target_dir / f"{name}.duckdb_extension"
        if dest.exists() and dest.stat().st_size == source.stat().st_size:
            continue
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}")
        shutil.copyfile(source, tmp)
        os.replace(tmp, dest)  # atomic: a concurrent process sees the old file or the whole new one


def extension_directory() -> str:
    """DuckDB's default extension folder (where the plain shell looks), or `EVALDUCK_DUCKDB_EXTENSIONS`."""
    return str(Path(os.environ.get("EVALDUCK_DUCKDB_EXTENSIONS") or Path.home() / ".duckdb" / "extensions"))


def _attach(target: StoreTarget) -> duckdb.DuckDBPyConnection:
    _install_extensions()
    con = duckdb.connect(config={"extension_directory": extension_directory()})
    options = f" (DATA_PATH '{_quote(target.data_path)}')" if target.data_path else ""
    attach = f"ATTACH 'ducklake:{_quote(target.catalog or '')}' AS {LAKE_ALIAS}{options}"
    for attempt in range(_ATTACH_ATTEMPTS):
        try:
            con.execute(attach)
            break
        except duckdb.Error as exc:
            # Two processes attaching a new catalog at once both create DuckLake's tables; PostgreSQL lets one
            # win and the other fails on a duplicate: attached again, it finds the catalog made.
            if attempt + 1 < _ATTACH_ATTEMPTS and ("duplicate key" in str(exc) or "already exists" in str(exc)):
                time.sleep(random.uniform(0.1, 0.5))
                continue
            con.close()
            raise StoreError(f"{target.label}: could not attach the shared store: {exc}") from exc
    con.execute(f"USE {LAKE_ALIAS}")
    return con


def _quote(text: str) -> str:
    return text.replace("'", "''")


@contextmanager
def session(target: StoreTarget) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor on this process's connection to the lake (attached on first use; a forked child attaches anew)."""
    key = (os.getpid(), target.catalog or "")
    with _sessions_guard:
        con = _sessions.get(key)
        if con is None:
            con = _sessions[key] = _attach(target)
    cursor = con.cursor()
    cursor.execute(f"USE {LAKE_ALIAS}")
    try:
        yield cursor
    finally:
        cursor.close()


def is_conflict(exc: BaseException) -> bool:
    """True for DuckLake's commit-time conflict with another process's transaction."""
    return isinstance(exc, duckdb.Error) and "conflict" in str(exc).lower()


def retry_conflicts(work: Callable[[], T]) -> T:
    """`work()` again (jittered backoff) while its transaction conflicts with another writer's."""
    deadline = time.monotonic() + _MAX_CONFLICT_WAIT_S
    backoff = 0.01
    while True:
        try:
            return work()
        except duckdb.Error as exc:
            if not is_conflict(exc) or time.monotonic() > deadline:
                raise
        time.sleep(random.uniform(0, backoff))
        backoff = min(backoff * 2, 0.25)


def ensure_write_token(con: duckdb.DuckDBPyConnection) -> None:
    """The one-row table every write updates (see the module docstring); created once, concurrently safe."""
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND table_name = ?", [TOKEN_TABLE]
    ).fetchone()
    if found and found[0]:
        return
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"CREATE TABLE IF NOT EXISTS {TOKEN_TABLE} AS SELECT 0::BIGINT AS writes")
        con.execute("COMMIT")
    except BaseException:
        _rollback(con)
        raise


def touch_write_token(con: duckdb.DuckDBPyConnection) -> None:
    """Make this write transaction conflict with any overlapping one (the module docstring says why)."""
    con.execute(f"UPDATE {TOKEN_TABLE} SET writes = writes + 1")


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass  # a failed COMMIT has already ended the transaction
