"""ResultWriter: group commit in a background thread, and failures that keep rows and surface."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flows.store import ResultWriter, ScoreRow, Store, StoreLockedError


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
