"""Real processes on one DuckDB file: concurrent writers and a reader, and a writer killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from evalduck.flows.store import Store

WORKER = Path(__file__).with_name("proc_worker.py")


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "EVALDUCK_DB_LOCK_TIMEOUT": "120"}
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def test_two_writers_and_a_reader_all_succeed(db_path: Path) -> None:
    Store(db_path)  # create the schema once, so the three processes race only on data
    writers = [_spawn("write", str(db_path), run, "60", "10") for run in ("run-one", "run-two")]
    reader = _spawn("read", str(db_path), "3")
    outputs = [proc.communicate(timeout=240) for proc in (*writers, reader)]
    for proc, (out, err) in zip((*writers, reader), outputs, strict=True):
        assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{out}\nstderr:\n{err}"
        assert "lock" not in err.lower(), err
    assert outputs[0][0].strip().endswith("done") and outputs[1][0].strip().endswith("done")
    assert int(outputs[2][0].split()[-1]) > 0  # the reader got answers while the writers ran
    assert "interrupted 0" in outputs[2][0]  # live writers are never taken for killed ones
    counts = Store(db_path).sql(
        "SELECT run_id, count(*), count(DISTINCT (item_id, scorer_id)), any_value(r.status) "
        "FROM scores JOIN runs AS r USING (run_id) GROUP BY run_id ORDER BY run_id"
    ).rows
    assert counts == [("run-one", 120, 120, "completed"), ("run-two", 120, 120, "completed")]
    items = Store(db_path).sql("SELECT run_id, count(*) FROM items GROUP BY run_id ORDER BY run_id").rows
    assert items == [("run-one", 60), ("run-two", 60)]


def test_sigkill_keeps_written_batches_and_resume_completes_exactly_once(db_path: Path) -> None:
    proc = _spawn("write", str(db_path), "run-k", "100", "8", "0.05")
    assert proc.stdout is not None
    confirmed = 0
    for line in proc.stdout:
        confirmed = int(line.split()[1])
        if confirmed >= 40:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    store = Store(db_path)
    kept = store.completed_cells("run-k")
    # Every batch confirmed before the kill is there; batches land whole (a multiple of the batch size).
    assert confirmed <= len(kept) < 200 and len(kept) % 8 == 0
    # Its writer is gone: opening the file marked it interrupted, ending at its last stored cell.
    assert store.interrupted == ["run-k"]
    (status, finished, last) = store.sql(
        "SELECT status, finished_at, (SELECT max(created_at) FROM scores WHERE run_id = 'run-k') "
        "FROM runs WHERE run_id = 'run-k'"
    ).rows[0]
    assert status == "interrupted" and finished == last

    resumed = _spawn("write", str(db_path), "run-k", "100", "8", "--resume")
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert f"resumed {200 - len(kept)}" in out  # only the missing cells were computed again
    rows = store.sql(
        "SELECT count(*), count(DISTINCT (item_id, scorer_id)), min(r.status) "
        "FROM scores JOIN runs AS r USING (run_id) WHERE run_id = 'run-k'"
    ).rows
    assert rows == [(200, 200, "completed")]
    assert store.sql("SELECT count(*), count(DISTINCT item_id) FROM items WHERE run_id = 'run-k'").rows == [(100, 100)]
