"""ResultWriter: group commit in a background thread, and failures that keep rows and surface."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evalduck.flows.store import ResultWriter, ScoreRow, Store, StoreLockedError


def _cell(i: int) -> ScoreRow:
    return ScoreRow(run_id="r", item_id=f"i{i}", scorer_id="s", scorer_version="1", score=i / 1000)


def test_many_small_adds_land_in_few_batches(store: Store) -> None:
    store.start_run("r", None, None, None, {})
    with ResultWriter(store, "r") as writer:
        for i in range(600):
            writer.add(items=[{"item_id": f"i{i}", "input": "q"}], scores=[_cell(i)])
        writer.flush()
        assert store.sql("SELECT count(*) FROM scores").rows == [(600,)]
        writer.add(scores=[_cell(1000)])
    assert store.sql("SELECT count(*), count(DISTINCT item_id) FROM scores").rows == [(601, 601)]
    assert store.sql("SELECT count(*) FROM items").rows == [(600,)]
    assert writer.batches_written < 600


def test_a_locked_file_surfaces_and_keeps_the_rows(db_path: Path) -> None:
    store = Store(db_path, lock_timeout=0.3)
    store.start_run("r", None, None, None, {})
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
         "sys.stdin.readline()", str(db_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "held"
    writer = ResultWriter(store, "r")
    writer.add(scores=[_cell(1), _cell(2)])
    with pytest.raises(StoreLockedError, match="held the DuckDB file lock"):
        writer.flush()
    holder.stdin.write("\n")
    holder.stdin.flush()
    holder.wait(timeout=30)
    writer.close()  # the queued rows are written once the lock is free
    assert store.sql("SELECT count(*) FROM scores").rows == [(2,)]


def test_flush_and_close_write_at_once_and_close_records_the_run_status(store: Store) -> None:
    store.start_run("r", None, None, None, {})
    writer = ResultWriter(store, "r", interval_s=3600)  # writes would otherwise wait an hour after the first
    writer.add(scores=[_cell(1)])
    writer.flush()
    writer.add(scores=[_cell(2)])
    done = threading.Thread(target=writer.flush, daemon=True)
    done.start()
    done.join(timeout=60)
    assert not done.is_alive(), "flush() waited out the interval"
    assert store.sql("SELECT count(*) FROM scores").rows == [(2,)]
    assert store.sql("SELECT status, finished_at FROM runs").rows == [("running", None)]
    writer.add(scores=[_cell(3)])
    closer = threading.Thread(target=writer.close, args=("completed",), daemon=True)
    closer.start()
    closer.join(timeout=60)
    assert not closer.is_alive(), "close() waited out the interval"
    (count, status, finished) = store.sql(
        "SELECT (SELECT count(*) FROM scores), status, finished_at IS NOT NULL FROM runs").rows[0]
    assert (count, status, finished) == (3, "completed", True)


def test_a_few_rows_wait_for_the_interval_and_a_full_batch_does_not(store: Store) -> None:
    store.start_run("r", None, None, None, {})
    with ResultWriter(store, "r", interval_s=3600, batch_rows=100) as writer:
        writer.add(scores=[_cell(0)])
        writer.flush()
        for i in range(1, 50):  # fewer than batch_rows: they wait (for the close, here)
            writer.add(scores=[_cell(i)])
        assert writer.batches_written == 1
        writer.add(scores=[_cell(i) for i in range(50, 150)])  # a full batch goes at once
        deadline = time.monotonic() + 60
        while writer.batches_written < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert store.sql("SELECT count(*) FROM scores").rows == [(150,)]
    assert writer.batches_written == 2


def test_an_empty_add_leaves_nothing_to_wait_for(store: Store) -> None:
    store.start_run("r", None, None, None, {})
    writer = ResultWriter(store, "r")
    writer.add(scores=[])  # e.g. a run with no skipped scorer queues its (no) skipped cells
    closer = threading.Thread(target=writer.close, daemon=True)
    closer.start()
    closer.join(timeout=60)
    assert not closer.is_alive(), "close() waited for a write that nothing asked for"
    assert writer.batches_written == 0
