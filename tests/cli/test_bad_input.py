"""The reliability probe's bad-input table (its section 4), kept true: each bad input ends with the
documented exit status (2 for a usage error, 1 for bad data), one message that names the file and line,
the option or the value, no traceback, and the results file holding what it held.

In-process through typer's runner, as the results commands' tests are (each case takes milliseconds);
the probe's worst case, invalid UTF-8, once more through the installed script in a real process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from evalduck.flows.cli import app
from evalduck.flows.store import Store

USAGE, BAD_DATA = 2, 1

FILES: dict[str, bytes] = {
    "malformed.jsonl": b'{"input": "a", "output": "b"}\n{"input": "a", "output": "c"}\n{"input": "a", "output": "b"\n',
    "noinput.jsonl": b'{"id": "a", "input": "q", "output": "o"}\n{"id": "b", "output": "o"}\n'
                     b'{"id": "c", "output": "o"}\n',
    "noinput3.csv": b"id,question,output\n1,What?,Yes.\n2,Why?,Because.\n",
    "bom-bad-row.csv": b"\xef\xbb\xbfid,input,output\n1,What?,Yes.\n2,,No input.\n",
    "badutf8.jsonl": b'{"id":"a","input":"ok","output":"ok"}\n{"id":"b","input":"caf\xe9","output":"ok"}\n',
    "badutf8.csv": b"input,output\nok,ok\ncaf\xe9,ok\n",
    "badutf8.json": b'[{"input": "ok", "output": "ok"},\n {"input": "caf\xe9", "output": "ok"}]\n',
    "object.json": b'{"rows_here": [{"input": "q"}]}',
    "garbage.jsonl": b"x" * 100_000 + b"\n",
    "empty.jsonl": b"",
    "blank.jsonl": b"\n\n  \n",
    "empty.csv": b"",
    "emptyarray.json": b"[]",
    "empty.json": b"",
    "fake.parquet": b"not parquet at all",
    "notduck.duckdb": b"plain text, not a database\n",
    "good.jsonl": b'{"id": "a", "input": "q", "output": "o"}\n',
}
READ_ONLY = "attached in read-only mode"

CASES: list[tuple[str, tuple[str, ...], int, tuple[str, ...]]] = [
    # the data's faults: exit 1, every message with its file and line
    ("malformed-line", ("run", "malformed.jsonl"), BAD_DATA,
     ("malformed.jsonl line 3: not valid JSON (Expecting ',' delimiter at column 29)",)),
    ("rows-without-input", ("run", "noinput.jsonl"), BAD_DATA,
     ("noinput.jsonl line 2 (item 'b'): missing `input`", "noinput.jsonl line 3 (item 'c'): missing `input`")),
    ("csv-without-input-column", ("run", "noinput3.csv"), BAD_DATA,
     ("noinput3.csv line 1: no `input` column (the columns are 'id', 'question', 'output')",)),
    ("csv-with-bom-and-a-bad-row", ("run", "bom-bad-row.csv"), BAD_DATA,
     ("bom-bad-row.csv line 3 (item '2'): missing `input`",)),
    ("invalid-utf8-jsonl", ("run", "badutf8.jsonl"), BAD_DATA,
     ("badutf8.jsonl line 2: not valid UTF-8 (byte 0xe9 at column 23, byte offset 60 of the file)",
      "save the file as UTF-8")),
    ("invalid-utf8-csv", ("run", "badutf8.csv"), BAD_DATA,
     ("badutf8.csv line 3: not valid UTF-8 (byte 0xe9 at column 4", 'Save As "CSV UTF-8"')),
    ("invalid-utf8-json", ("run", "badutf8.json"), BAD_DATA, ("badutf8.json line 2: not valid UTF-8 (byte 0xe9",)),
    ("json-object-without-items", ("run", "object.json"), BAD_DATA,
     ("object.json: expected a JSON array of rows (or an object with an `items` array)",)),
    ("garbage-line", ("run", "garbage.jsonl"), BAD_DATA, ("garbage.jsonl line 1: not valid JSON",)),
    ("empty-jsonl", ("run", "empty.jsonl"), BAD_DATA, ("empty.jsonl: the dataset has no rows",)),
    ("blank-lines-jsonl", ("run", "blank.jsonl"), BAD_DATA, ("blank.jsonl: the dataset has no rows",)),
    ("empty-csv", ("run", "empty.csv"), BAD_DATA, ("empty.csv: the dataset has no rows",)),
    ("empty-array-json", ("run", "emptyarray.json"), BAD_DATA, ("emptyarray.json: the dataset has no rows",)),
    ("empty-json", ("run", "empty.json"), BAD_DATA, ("empty.json line 1: not valid JSON (Expecting value",)),
    ("not-parquet", ("run", "fake.parquet"), BAD_DATA, ("fake.parquet: cannot read Parquet",)),
    ("parquet-wrong-types", ("run", "wrongtypes.parquet"), BAD_DATA,
     ("wrongtypes.parquet row 1: `input` must be a string or a list of chat messages, got int: 42",)),
    # usage errors: exit 2, the option (or argument) as typed and the value
    ("no-such-dataset", ("run", "nonexistent.jsonl"), USAGE, ("DATASET 'nonexistent.jsonl': no such dataset file",)),
    ("dataset-is-a-folder", ("run", "adir"), USAGE, ("DATASET 'adir': is a folder, not a dataset file",)),
    ("unknown-scorer", ("run", "good.jsonl", "-s", "tone", "-s", "answer-relevancy"), USAGE,
     ("--scorer must be one of", "got 'tone'")),
    ("concurrency-zero", ("run", "good.jsonl", "--concurrency", "0"), USAGE,
     ("--concurrency must be between 1 and 256, got 0",)),
    ("retries-negative", ("run", "good.jsonl", "--retries", "-1"), USAGE,
     ("--retries must be between 0 and 10, got -1",)),
    ("judge-rpm-negative", ("run", "good.jsonl", "--judge-rpm", "-5"), USAGE,
     ("--judge-rpm must be greater than 0, got -5",)),
    ("resume-unknown-run", ("run", "good.jsonl", "--resume", "nosuchrun"), USAGE,
     ("--resume: ", "no run with id or name 'nosuchrun'", "Recent runs: run-2 (nightly)")),
    ("compare-unknown-run", ("compare", "nosuchrun", "latest"), USAGE, ("no run with id or name 'nosuchrun'",)),
    ("gate-unknown-run", ("compare", "latest", "nosuch2", "--fail-below", "0.05"), USAGE,
     ("no run with id or name 'nosuch2'",)),
    ("show-unknown-run", ("show", "nosuch"), USAGE, ("no run with id or name 'nosuch'",)),
    ("compare-on-a-missing-file", ("--db", "fresh.duckdb", "compare", "previous", "latest"), USAGE,
     ("no such results file", "fresh.duckdb")),
    ("sql-syntax", ("sql", "SELEC * FROM runs"), USAGE, ("Parser Error: syntax error at or near \"SELEC\"",)),
    ("sql-no-such-table", ("sql", "SELECT * FROM nosuchtable"), USAGE, ("Catalog Error", "nosuchtable")),
    ("sql-drop", ("sql", "DROP TABLE runs"), USAGE, (READ_ONLY,)),
    ("sql-delete", ("sql", "DELETE FROM scores"), USAGE, (READ_ONLY,)),
    ("sql-update", ("sql", "UPDATE runs SET name = 'x'"), USAGE, (READ_ONLY,)),
    ("sql-create", ("sql", "CREATE TABLE t (x INT)"), USAGE, (READ_ONLY,)),
    ("sql-second-statement", ("sql", "SELECT 1; DELETE FROM scores"), USAGE, (READ_ONLY,)),
    ("sql-attach-and-drop", ("sql", "ATTACH 'evals.duckdb' AS w; DROP TABLE w.runs"), USAGE, (READ_ONLY,)),
    ("sql-copy-onto-the-file", ("sql", "COPY (SELECT 'pwned' AS x) TO 'evals.duckdb' (FORMAT csv)"), USAGE,
     ("Cannot COPY to",)),
    ("db-not-duckdb", ("--db", "notduck.duckdb", "runs"), USAGE, ("not a valid DuckDB database file",)),
    ("db-folder-missing", ("--db", "nodir/x.duckdb", "runs"), USAGE,
     ("--db 'nodir/x.duckdb': folder", "does not exist")),
    ("db-of-another-app", ("--db", "other.duckdb", "runs"), USAGE,
     ("this DuckDB file has tables (t) but no evalduck schema_version table",)),
]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with results worth keeping (two runs named nightly) and one bad input of each kind."""
    folder = tmp_path_factory.mktemp("bad-input")
    for name, data in FILES.items():
        (folder / name).write_bytes(data)
    (folder / "adir").mkdir()
    duckdb.sql(f"COPY (SELECT 42 AS input, {{'a': 1}} AS output) TO '{folder / 'wrongtypes.parquet'}'")
    with duckdb.connect(str(folder / "other.duckdb")) as con:
        con.execute("CREATE TABLE t (x INT)")
    store = Store(folder / "evals.duckdb")
    for n in (1, 2):
        store.start_run(f"run-{n}", "nightly", "good.jsonl", "h", {})
        store.write_batch(f"run-{n}", items=[{"item_id": "a", "input": "q"}],
                          scores=[{"item_id": "a", "scorer_id": "tone-scorer", "scorer_version": "1", "score": 1.0}])
        store.finish_run(f"run-{n}", "completed")
    return folder


def _held(folder: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(folder / "evals.duckdb"), read_only=True) as con:
        return con.execute(
            "SELECT (SELECT list(run_id || ':' || status ORDER BY run_id) FROM runs), (SELECT count(*) FROM items),"
            " (SELECT count(*) FROM scores), (SELECT sum(score) FROM scores)").fetchall()


@pytest.fixture
def in_work(work: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Commands run from the folder; `run` sets environment defaults and the import path for its process,
    which are put back for the tests that follow."""
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", list(sys.path))
    environ = dict(os.environ)
    yield work
    os.environ.clear()
    os.environ.update(environ)


@pytest.mark.parametrize(("args", "code", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_input(in_work: Path, args: tuple[str, ...], code: int, expected: tuple[str, ...]) -> None:
    before = _held(in_work)
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == code, result.output
    err = result.stderr
    assert err.startswith("error: ") and "Traceback" not in err and "pydantic.dev" not in err, err
    for text in expected:
        assert text in err, f"{text!r} not in {err!r}"
    assert result.stdout == ""
    assert _held(in_work) == before, "a failing command changed what the results file held"


def test_invalid_utf8_through_the_installed_script(work: Path) -> None:
    """The probe's traceback case, as a user types it."""
    script = Path(sys.executable).with_name("evalduck")
    done = subprocess.run([str(script), "run", "badutf8.csv", "-s", "tone-scorer"], cwd=work, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == BAD_DATA, done.stderr
    assert done.stderr.startswith("error: badutf8.csv line 3: not valid UTF-8 (byte 0xe9 at column 4"), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_every_bad_line_is_counted_through_the_installed_script(work: Path) -> None:
    """1,000 lines that are not JSON and one without `input`, in a CSV and a JSONL file: the first ten listed
    in file order, the rest counted, as rows with a missing field always were."""
    (work / "broken.jsonl").write_text('{"input": "q"}\n' + '{"input": "q", oops\n' * 999 + '{"output": "o"}\n')
    (work / "broken.csv").write_text('input,metadata\nq,{}\nq,{oops\nq,{},extra\n')
    script = Path(sys.executable).with_name("evalduck")
    for name, first, count in [("broken.jsonl", 'broken.jsonl line 2: not valid JSON (Expecting property name', 990),
                               ("broken.csv", "broken.csv line 3: `metadata` must be a JSON object, got '{oops'", 0)]:
        done = subprocess.run([str(script), "run", name, "-s", "tone-scorer"], cwd=work, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == BAD_DATA, done.stderr
        lines = done.stderr.splitlines()
        assert lines[0].startswith("error: " + first) and "Traceback" not in done.stderr, done.stderr
        if count:
            assert len(lines) == 11 and lines[-1] == f"... and {count} more problem(s)", done.stderr
            assert lines[9].startswith("broken.jsonl line 11: not valid JSON"), done.stderr
        else:
            assert lines[1:] == ["broken.csv line 4: more cells than header columns"], done.stderr
        assert done.stdout == ""
