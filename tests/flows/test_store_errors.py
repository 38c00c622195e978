"""A store that stays locked mid-run: the run stops with StoreWriteError naming the file (not masked by the
failed attempt to mark the run failed in that same locked file), and what was written before stays."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flows import run_evals
from flows.engine import StoreWriteError
from flows.store import Store

from flow_helpers import rows

pytestmark = pytest.mark.usefixtures("prefect_harness")

HOLD = """
import duckdb, pathlib, sys, time
con = duckdb.connect(sys.argv[1])  # read-write: no other process can open the file now
pathlib.Path(sys.argv[2]).touch()
time.sleep(60)
"""


def test_a_store_locked_mid_run_stops_it_with_a_clear_error_and_keeps_earlier_rows(
    workdir: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALDUCK_DB_LOCK_TIMEOUT", "1")
    ready = tmp_path / "locked"
    holder: list[subprocess.Popen[bytes]] = []

    async def target(question: Any) -> str:
        if "number 3" in str(question):  # once items 0-2 are written, another process takes the file
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and Store(workdir["db"]).sql(
                "SELECT count(*) FROM items WHERE output IS NOT NULL"
            ).rows[0][0] < 3:
                time.sleep(0.05)
            holder.append(subprocess.Popen([sys.executable, "-c", HOLD, workdir["db"], str(ready)]))
            deadline = time.monotonic() + 60
            while not ready.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return f"answer to {question}"

    try:
        with pytest.raises(StoreWriteError) as info:
            run_evals(rows(6), scorers=["tone-scorer"], target=target, concurrency=1, **workdir)
    finally:
        for process in holder:
            process.kill()
            process.wait()
    message = str(info.value)
    assert workdir["db"] in message and "what was written before stays" in message
    store = Store(workdir["db"])
    (run_id,) = store.sql("SELECT run_id FROM runs").rows[0]
    written = dict(store.sql("SELECT item_id, output FROM items WHERE run_id = ? AND output IS NOT NULL",
                             [run_id]).rows)
    assert {"q-0", "q-1", "q-2"} <= set(written)
    assert json.loads(written["q-0"]) == "answer to What is the capital of country number 0?"  # a JSON column
