"""The error family through the real CLI in a subprocess: a dataset's, the store's and init's errors, each as
one `error: ...` line with the exit status of cli/errors.py's table (1 a failure, 2 a usage error), no
traceback; and `from evalduck import EvalduckError` in a plain interpreter, without the library's imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalduck.flows.store import Store

PREFECT_IMPORTED = "<prefect was imported>"
_ENTRY = (
    "import atexit, sys\n"
    f"atexit.register(lambda: 'prefect' in sys.modules and sys.stderr.write('\\n{PREFECT_IMPORTED}\\n'))\n"
    "sys.argv[0] = 'evalduck'\n"
    "from evalduck.flows.cli import main\n"
    "main()\n"
)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder with one good row in `data.jsonl`, a row without input in `bad.jsonl`, a text file named
    `junk.duckdb` and an empty results file."""
    (tmp_path / "data.jsonl").write_text(json.dumps({"id": "a", "input": "hi", "output": "hello"}) + "\n")
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id": "a", "input": "hi", "output": "x"}) + "\n"
                                        + json.dumps({"id": "b", "output": "y"}) + "\n")
    (tmp_path / "junk.duckdb").write_text("not a DuckDB file\n")
    Store(tmp_path / "evals.duckdb")
    return tmp_path


def evalduck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("EVALDUCK_DB", "EVALDUCK_PORT", "PREFECT_API_URL")}
    return subprocess.run([sys.executable, "-c", _ENTRY, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60, env=environ)


def one_error(done: subprocess.CompletedProcess[str], code: int) -> str:
    """Assert exit `code` with one `error: ...` message on stderr (no help line: not a usage error of an
    option), found before Prefect was imported; returns it. It is one line however long (a path in it included):
    no command wraps a message in a pipe."""
    err = done.stderr
    assert done.returncode == code, f"exit {done.returncode}\n{done.stdout}\n{err}"
    assert "Traceback" not in err and PREFECT_IMPORTED not in err, err
    lines = err.strip().splitlines()
    assert lines[0].startswith("error: ") and not any(line.startswith(("error:", "Try ")) for line in lines[1:]), err
    assert len(lines) == 1 or code == 2 and "Usage:" in err, err
    return lines[0]


def test_a_dataset_with_a_bad_row_fails_the_run_with_exit_1(work: Path) -> None:
    line = one_error(evalduck(work, "run", "bad.jsonl"), 1)
    assert line == "error: bad.jsonl line 2 (item 'b'): missing `input`"


def test_a_store_that_is_not_duckdb_fails_a_run_with_exit_1(work: Path) -> None:
    line = one_error(evalduck(work, "--db", "junk.duckdb", "run", "data.jsonl", "--resume", "abc"), 1)
    assert "junk.duckdb" in line and "not a valid DuckDB database file" in line


def test_the_same_store_given_to_a_reading_command_is_a_usage_error(work: Path) -> None:
    line = one_error(evalduck(work, "--db", "junk.duckdb", "show", "latest"), 2)
    assert "junk.duckdb" in line and "not a valid DuckDB database file" in line


def test_a_run_reference_that_names_no_run_is_a_usage_error(work: Path) -> None:
    line = one_error(evalduck(work, "show", "nope"), 2)
    assert "nope" in line


def test_init_over_an_existing_project_fails_with_exit_1(work: Path) -> None:
    first = evalduck(work, "init", "--dataset", "data.jsonl")
    assert first.returncode == 0, first.stderr
    line = one_error(evalduck(work, "init", "--dataset", "data.jsonl"), 1)
    assert line.endswith("exists: nothing was written (use --force to overwrite it)"), line


def test_the_base_imports_from_evalduck_alone() -> None:
    script = ("import sys\nfrom evalduck import EvalduckError\n"
              "print(EvalduckError.__module__, 'evalduck.scorers' in sys.modules, 'evalduck.flows' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["evalduck.errors", "False", "False"]
