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
from flow_helpers import rows

from evalduck.flows import run_evals
from evalduck.flows.engine import StoreWriteError
from evalduck.flows.store import Store

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
ENTRY = "import sys\nsys.argv[0] = 'evalduck'\nfrom evalduck.flows.cli import main\nmain()\n"


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


# A target whose answers fill a small disk in a few dozen items (38 kB each, not very compressible).
BIG = '''
import hashlib
def answer(question):
    seed = hashlib.sha256(question.encode()).hexdigest()
    return "".join(hashlib.sha256(f"{seed}{i}".encode()).hexdigest() for i in range(600))
'''
LIMIT = 2_000_000  # bytes per file: an empty results file is ~0.8 MB
TMPFS_SIZE = 3_000_000  # bytes for the file and its .wal together


class SmallDisk:
    """Where the results file cannot grow much: a file size limit (RLIMIT_FSIZE, as `ulimit -f` sets it; writes
    past it fail with EFBIG, no privilege needed), or, as root, a small tmpfs (ENOSPC)."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind, self.folder = kind, root / "disk"
        self.folder.mkdir()
        self.mounted = False
        if kind == "tmpfs":
            import os

            if os.geteuid() != 0:
                pytest.skip("a tmpfs needs root; the file size limit case covers the same path unprivileged")
            if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(self.folder)],
                              capture_output=True).returncode != 0:
                pytest.skip("mount -t tmpfs failed (no CAP_SYS_ADMIN here)")
            self.mounted = True
        self.meaning = ("no space left on the device" if kind == "tmpfs" else
                        "the file reached the size limit (`ulimit -f`, or the file system's largest file)")
        self.remedy = "Free space on that disk" if kind == "tmpfs" else "Raise that limit"

    def prelude(self) -> str:
        """Python run before the CLI in its process: the limit, for the file size case."""
        if self.kind != "fsize":
            return ""
        return ("import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                f"resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, {LIMIT}))\n")

    def grow(self) -> None:
        """Room again: the limit is only in the limited processes; the tmpfs is remounted larger."""
        if self.mounted:
            subprocess.run(["mount", "-o", "remount,size=64M", str(self.folder)], check=True)

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", str(self.folder)], check=True)


@pytest.fixture(params=["fsize", "tmpfs"])
def small_disk(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    disk = SmallDisk(request.param, tmp_path)
    yield disk
    disk.close()


def _cli_env() -> dict[str, str]:
    import os

    from prefect.settings import get_current_settings

    return {**os.environ, "PREFECT_API_URL": str(get_current_settings().api.url)}


def _evalduck(cwd: Path, *args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", prelude + ENTRY, *args], cwd=cwd, env=_cli_env(),
                          capture_output=True, text=True, timeout=300)


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and len(done.stderr.strip().splitlines()) <= 3, done.stderr  # + Prefect's, progress
    return errors[0]


def test_a_disk_full_mid_run_is_one_line_naming_the_file_and_the_resume_that_finishes_it(
    tmp_path: Path, small_disk: SmallDisk
) -> None:
    import shlex

    (tmp_path / "big.py").write_text(BIG)
    (tmp_path / "first.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(6)))
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(150)))
    db = small_disk.folder / "evals.duckdb"
    earlier = _evalduck(tmp_path, "--db", str(db), "run", "first.jsonl", "-s", "tone-scorer", "--no-report")
    assert earlier.returncode == 0, earlier.stderr

    done = _evalduck(tmp_path, "--db", str(db), "run", "data.jsonl", "-s", "tone-scorer", "--target", "big:answer",
                     "--no-report", prelude=small_disk.prelude())
    line = _one_error_line(done)
    store = Store(db)
    (run_id,) = store.sql("SELECT run_id FROM runs WHERE dataset = 'data.jsonl'").rows[0]
    assert line.startswith(f"error: run {run_id} stopped: {db}"), line  # the file, or its .wal
    for text in (f": {small_disk.meaning}; ", " finished cell(s) are stored (",
                 f"{small_disk.remedy}, then finish the run with: evalduck --db {db} run data.jsonl"):
        assert text in line, line
    assert store.run_record(run_id).status == "failed"  # as for any other failure; the earlier run is intact
    assert store.sql("SELECT runs.status, count(*) FROM runs JOIN scores USING (run_id) WHERE dataset = 'first.jsonl' "
                     "GROUP BY runs.status").rows == [("completed", 6)]

    small_disk.grow()
    command = shlex.split(line.split("finish the run with: ", 1)[1])
    assert command[0] == "evalduck" and command[-2:] == ["--resume", run_id]
    resumed = _evalduck(tmp_path, *command[1:])
    assert resumed.returncode == 0, resumed.stderr
    store = Store(db)
    assert store.sql("SELECT count(*), count(DISTINCT item_id) FROM scores WHERE run_id = ?", [run_id]).rows == [(150, 150)]
    assert store.run_record(run_id).status == "completed"


def test_a_disk_full_at_the_run_start_is_one_line_and_records_nothing(tmp_path: Path, small_disk: SmallDisk) -> None:
    import hashlib

    (tmp_path / "first.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(6)))
    big_inputs = [{**r, "input": "".join(hashlib.sha256(f"{r['id']}{j}".encode()).hexdigest() for j in range(150))}
                  for r in rows(400)]  # 3.8 MB of items, all written when the run starts
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in big_inputs))
    db = small_disk.folder / "evals.duckdb"
    earlier = _evalduck(tmp_path, "--db", str(db), "run", "first.jsonl", "-s", "tone-scorer", "--no-report")
    assert earlier.returncode == 0, earlier.stderr

    done = _evalduck(tmp_path, "--db", str(db), "run", "data.jsonl", "-s", "tone-scorer", "--no-report",
                     prelude=small_disk.prelude())
    line = _one_error_line(done)
    assert line.startswith(f"error: {db}"), line
    assert line.endswith(f": {small_disk.meaning}; the run did not start and the file is as it was. "
                         f"{small_disk.remedy}, or choose another --db."), line
    small_disk.grow()
    store = Store(db)
    assert store.sql("SELECT dataset, status FROM runs").rows == [("first.jsonl", "completed")]
    assert store.sql("SELECT count(*) FROM scores").rows == [(6,)]


@pytest.mark.parametrize("where", ["under a file", "read-only mount"])
def test_an_unwritable_cache_folder_is_one_line_before_the_run_is_recorded(tmp_path: Path, where: str) -> None:
    import os

    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(3)))
    if where == "under a file":  # a folder whose parent is a regular file: unwritable for root too
        (tmp_path / "notes.txt").write_text("a file, not a folder\n")
        cache = tmp_path / "notes.txt" / "cache"
    else:
        if os.geteuid() != 0:
            pytest.skip("a read-only mount needs root; the case under a file covers unprivileged users")
        mount = tmp_path / "ro"
        mount.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M,ro", "tmpfs", str(mount)],
                          capture_output=True).returncode != 0:
            pytest.skip("mount -t tmpfs failed (no CAP_SYS_ADMIN here)")
        cache = mount / "cache"
    try:
        done = _evalduck(tmp_path, "run", "data.jsonl", "-s", "tone-scorer", "--no-report", "--cache-dir", str(cache))
    finally:
        if where != "under a file":
            subprocess.run(["umount", str(tmp_path / "ro")], check=True)
    line = _one_error_line(done)
    reason = "Not a directory" if where == "under a file" else "Read-only file system"
    assert line == (f"error: step cache folder {cache} cannot be written ({reason}). Choose another --cache-dir "
                    "(or EVALDUCK_CACHE_DIR)."), line
    assert not (tmp_path / "evals.duckdb").exists()  # no run recorded: the store was not even opened
