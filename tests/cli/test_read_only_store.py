"""Read commands on a results file this process may not write (a read-only mount, a colleague's 0444 file):
they read it through a read-only opening, as `duckdb.connect(path, read_only=True)` can, instead of failing
on the read-write opening that migrating and marking `interrupted` runs need. The CLI runs in a subprocess,
as a user runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalduck.flows.store import Store

ENTRY = "import sys\nsys.argv[0] = 'evalduck'\nfrom evalduck.flows.cli import main\nmain()\n"
# A run left `running` by a process that is gone (it exits without finishing the run).
KILLED_RUN = """
import sys
from evalduck.flows.store import Store
store = Store(sys.argv[1])
store.start_run("run-killed", "nightly", "qa.jsonl", "h1", {}, items=[{"item_id": "q0", "input": "question 0"}])
store.write_scores("run-killed", [{"item_id": "q0", "scorer_id": "tone-scorer", "scorer_version": "1", "score": 0.5}])
"""


def _fill(path: Path) -> None:
    store = Store(path)
    for run_id in ("run-a", "run-b"):
        store.start_run(run_id, "nightly", "qa.jsonl", "h1", {}, items=[{"item_id": f"q{i}", "input": f"question {i}"}
                                                                         for i in range(3)])
        store.write_scores(run_id, [{"item_id": f"q{i}", "scorer_id": "tone-scorer", "scorer_version": "1",
                                     "score": 0.8} for i in range(3)])
        store.finish_run(run_id, "completed")
    subprocess.run([sys.executable, "-c", KILLED_RUN, str(path)], check=True, timeout=120)


# Root writes any file whatever its mode (CAP_DAC_OVERRIDE): root's CLI runs without that capability to meet
# a 0444 file as its other users do.
_AS_A_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
              "--inh-caps=-dac_override,-dac_read_search", "--"]


class ReadOnly:
    """A results file put where the CLI cannot write it: `mount`, a tmpfs remounted read-only (needs root);
    `mode`, a 0444 file in a 0555 folder, a colleague's file (as root, the CLI runs without CAP_DAC_OVERRIDE)."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind, self.folder, self.mounted = kind, folder, False
        self.prefix: list[str] = []
        folder.mkdir()
        if kind == "mount":
            if os.geteuid() != 0:
                pytest.skip("a read-only mount needs root; the 0444 case covers unprivileged users")
            if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16M", "tmpfs", str(folder)],
                              capture_output=True).returncode != 0:
                pytest.skip("mount -t tmpfs failed (no CAP_SYS_ADMIN here)")
            self.mounted = True
        elif os.geteuid() == 0:
            if shutil.which("setpriv") is None:
                pytest.skip("root writes a 0444 file, and setpriv (to run without CAP_DAC_OVERRIDE) is missing")
            self.prefix = _AS_A_USER

    def place(self, src: Path) -> Path:
        dest = self.folder / src.name
        shutil.copy(src, dest)
        if self.mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(self.folder)], check=True, capture_output=True)
        else:
            dest.chmod(0o444)
            self.folder.chmod(0o555)
        probe = subprocess.run([*self.prefix, sys.executable, "-c", "import os, sys; sys.exit(os.access(sys.argv[1], "
                                "os.W_OK))", str(dest)])
        if probe.returncode != 0:
            pytest.skip(f"{dest} stayed writable: no read-only file to test with")
        return dest

    def cli(self, db: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, sys.executable, "-c", ENTRY, "--db", str(db), *args], cwd=cwd,
                              capture_output=True, text=True, timeout=120)

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", str(self.folder)], check=True)
        self.folder.chmod(0o755)


@pytest.fixture(params=["mount", "mode"])
def read_only(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReadOnly]:
    place = ReadOnly(request.param, tmp_path / "ro")
    yield place
    place.close()


def _cli(db: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", ENTRY, "--db", str(db), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_read_commands_read_a_results_file_they_may_not_write(tmp_path: Path, read_only: ReadOnly) -> None:
    _fill(tmp_path / "evals.duckdb")
    db = read_only.place(tmp_path / "evals.duckdb")
    before = db.read_bytes()

    listed = read_only.cli(db, "runs", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    for run_id in ("run-a", "run-b", "run-killed"):
        assert run_id in listed.stdout
    # The gone writer's run cannot be marked `interrupted` here: one note says so, the listing shows it as stored.
    (note,) = listed.stderr.strip().splitlines()
    assert note.startswith(f"note: {db} cannot be written here") and note.endswith("run-killed"), listed.stderr

    counted = read_only.cli(db, "sql", "SELECT count(*) AS cells FROM scores", "--format", "csv", cwd=tmp_path)
    assert counted.returncode == 0, counted.stderr
    assert counted.stdout.splitlines() == ["cells", "7"]

    shown = read_only.cli(db, "show", "run-b", cwd=tmp_path)
    assert shown.returncode == 0 and "run-b" in shown.stdout and "tone-scorer" in shown.stdout, shown.stderr
    compared = read_only.cli(db, "compare", "run-a", "run-b", "--fail-below", "0.1", cwd=tmp_path)
    assert compared.returncode == 0 and "OK:" in compared.stdout, compared.stderr

    # The report's default place is beside the results file, here read-only: one line saying what to do.
    reported = read_only.cli(db, "report", "run-b", cwd=tmp_path)
    assert reported.returncode == 1 and "Traceback" not in reported.stderr, reported.stderr
    (line,) = [ln for ln in reported.stderr.splitlines() if not ln.startswith("note:")]
    assert line.startswith("error: could not write the report (") and "Pass --output FILE" in line, line
    elsewhere = read_only.cli(db, "report", "run-b", "--output", str(tmp_path / "run-b.html"), cwd=tmp_path)
    assert elsewhere.returncode == 0 and (tmp_path / "run-b.html").stat().st_size > 0, elsewhere.stderr

    writing = read_only.cli(db, "sql", "DELETE FROM scores", "--write", cwd=tmp_path)  # --write still needs a writable file
    assert writing.returncode == 2 and writing.stderr.startswith("error: "), writing.stderr
    assert db.read_bytes() == before


def test_a_reader_still_waits_for_a_writer_of_a_writable_file(tmp_path: Path) -> None:
    """Reading falls back to read-only only when the file cannot be written: a file another process holds for
    writing is waited for (its lock), as before, and then read and kept up to date (marked `interrupted`)."""
    db = tmp_path / "evals.duckdb"
    _fill(db)
    ready = tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, pathlib, sys, time\n"
        "con = duckdb.connect(sys.argv[1])\n"
        "pathlib.Path(sys.argv[2]).touch()\n"
        "time.sleep(1.5)\n"
        "con.close()\n"), str(db), str(ready)])
    try:
        while not ready.exists() and holder.poll() is None:
            time.sleep(0.01)
        listed = _cli(db, "runs", cwd=tmp_path)
    finally:
        holder.wait(timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr == "" and "interrupted" in listed.stdout, listed.stdout


def test_read_commands_read_a_file_on_a_full_disk(tmp_path: Path) -> None:
    """A full disk (here: a file size limit of 64 bytes, below any write of DuckDB's to the file or its .wal) fails
    the write that marks a dead writer's run `interrupted`; the listing is still read and shown."""
    db = tmp_path / "evals.duckdb"
    _fill(db)
    limited = ("import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
               "resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))\n")
    listed = subprocess.run([sys.executable, "-c", limited + ENTRY, "--db", str(db), "runs"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "run-killed" in listed.stdout and "running" in listed.stdout
    assert listed.stderr.startswith(f"note: {db} cannot be written here"), listed.stderr
    assert Store(db).run_record("run-killed").status == "interrupted"  # once there is room, as always
