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
deadline = time.monotonic() + 30
while True:  # the run's writer may hold the file for a moment: take it as soon as it is free
    try:
        con = duckdb.connect(sys.argv[1])  # read-write: no other process can open the file now
        break
    except duckdb.IOException:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.01)
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


# A target module for the CLI: at the fourth item, another process takes the results file and keeps it.
LOCKER = '''
import os, pathlib, subprocess, sys, time
HOLD = """
import duckdb, os, pathlib, sys, time
while True:
    try:
        con = duckdb.connect(sys.argv[1])
        break
    except duckdb.IOException:
        time.sleep(0.01)
pathlib.Path(sys.argv[2]).write_text(str(os.getpid()))
time.sleep(120)
"""
def answer(question):
    ready = pathlib.Path("holder.pid")
    if "number 3" in question and not ready.exists():
        subprocess.Popen([sys.executable, "-c", HOLD, "evals.duckdb", str(ready)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # not the CLI's pipes
        while not ready.exists():
            time.sleep(0.05)
    return f"answer to {question}"
'''
ENTRY = "import sys\nsys.argv[0] = 'evalduck'\nfrom flows.cli import main\nmain()\n"


def test_the_cli_says_in_one_line_who_held_the_file_what_is_kept_and_how_to_resume(tmp_path: Path) -> None:
    import os
    import shlex
    import signal

    from prefect.settings import get_current_settings

    (tmp_path / "locker.py").write_text(LOCKER)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(6)))
    env = {**os.environ, "PREFECT_API_URL": str(get_current_settings().api.url), "EVALDUCK_DB_LOCK_TIMEOUT": "1"}

    def evalduck(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)

    try:
        done = evalduck("run", "data.jsonl", "-s", "tone-scorer", "--target", "locker:answer", "--concurrency", "1")
    finally:
        pid_file = tmp_path / "holder.pid"
        holder = int(pid_file.read_text()) if pid_file.exists() else None
        if holder is not None:
            os.kill(holder, signal.SIGKILL)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and len(done.stderr.strip().splitlines()) <= 3, done.stderr  # + Prefect's, progress
    line = errors[0]
    (run_id,) = Store(tmp_path / "evals.duckdb").sql("SELECT run_id FROM runs").rows[0]
    for text in (f"error: run {run_id} stopped: pid {holder} (", "held", "for more than 1 s",
                 "Close that process, then finish the run with: evalduck run data.jsonl"):
        assert text in line, line
    assert "finished cell(s) are stored" in line or "what it wrote before is stored" in line, line
    # The command it prints finishes the run: every cell exactly once.
    command = shlex.split(line.split("finish the run with: ", 1)[1])
    assert command[0] == "evalduck" and command[-2:] == ["--resume", run_id]
    resumed = evalduck(*command[1:])
    assert resumed.returncode == 0, resumed.stderr
    store = Store(tmp_path / "evals.duckdb")
    assert store.sql("SELECT count(*), count(DISTINCT item_id) FROM scores WHERE run_id = ?", [run_id]).rows == [(6, 6)]
    assert store.run_record(run_id).status == "completed"
