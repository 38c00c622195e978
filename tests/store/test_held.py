"""Store.held: a burst of this process's operations shares one opening of the DuckDB file, and other
processes wait for the block, as for any single operation."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalduck.flows.store import Store, StoreError


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every duckdb.connect of a file, by path."""
    seen: list[str] = []
    real = duckdb.connect

    def counting(database: Any = ":memory:", *args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        seen.append(str(database))
        return real(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counting)
    return seen


def _other_process_opens(path: Path) -> str:
    """What a plain read-only open from another process says: 'opened' or DuckDB's lock error."""
    code = ("import duckdb, sys\n"
            "try:\n    duckdb.connect(sys.argv[1], read_only=True).close(); print('opened')\n"
            "except duckdb.IOException as exc:\n    print('locked' if 'lock' in str(exc) else exc)\n")
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_held_burst_opens_the_file_once_and_its_writes_stay(db_path: Path, opens: list[str], add_run: Any) -> None:
    store = Store(db_path)
    opens.clear()
    with store.held():
        add_run(store, "r1", {"a": {"s": 1.0}}, name="n")
        add_run(store, "r2", {"a": {"s": 0.5}}, name="n", minutes=1)
        assert store.last_completed("n") == "r2"
        summary = store.run_summary("r2")
        assert store.compare("r1", "r2")
        assert store.sql("SELECT count(*) FROM runs").rows == [(2,)]
    assert opens == [str(db_path)]
    assert summary.scorers
    assert Store(db_path).sql("SELECT run_id FROM runs ORDER BY run_id").rows == [("r1",), ("r2",)]


def test_other_processes_wait_for_the_held_block(db_path: Path) -> None:
    store = Store(db_path)
    assert _other_process_opens(db_path) == "opened"
    with store.held():
        assert _other_process_opens(db_path) == "locked"
    assert _other_process_opens(db_path) == "opened"


def test_threads_and_nested_blocks_share_the_held_opening(db_path: Path, opens: list[str], add_run: Any) -> None:
    store = Store(db_path)
    add_run(store, "r1", {"a": {"s": 1.0}, "b": {"s": 0.0}})
    opens.clear()
    results: list[Any] = []
    with store.held():
        with store.held():
            threads = [threading.Thread(target=lambda: results.append(store.run_summary("r1"))) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        results.append(store.run_summary("r1"))  # the outer block still holds it
    assert len(results) == 5 and all(r == results[0] for r in results)
    assert opens == [str(db_path)]
    store.run_summary("r1")
    assert len(opens) == 2  # after the block, an operation opens the file again


def test_a_failure_inside_the_block_rolls_back_its_transaction_and_releases_the_file(db_path: Path, add_run: Any) -> None:
    store = Store(db_path)
    with pytest.raises(duckdb.Error), store.held():
        add_run(store, "r1", {"a": {"s": 1.0}})
        store.sql("INSERT INTO runs (run_id) VALUES ('r1')", write=True)  # a duplicate key: fails, rolls back
    assert _other_process_opens(db_path) == "opened"
    assert Store(db_path).sql("SELECT run_id FROM runs").rows == [("r1",)]


def test_a_file_held_elsewhere_is_a_store_error_naming_it(db_path: Path) -> None:
    store = Store(db_path, lock_timeout=0.2)
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time\ncon = duckdb.connect(sys.argv[1])\n"
                               "print('held', flush=True)\ntime.sleep(30)", str(db_path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match=str(db_path)), store.held():
            pass
    finally:
        holder.kill()
        holder.wait()
