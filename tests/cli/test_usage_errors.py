"""Usage errors of every command, through the real CLI in a subprocess: exit 2, one or two lines on stderr
(`error: ...` and where help is), naming the option as typed, the value given and the choices or the rule,
with no traceback, no pydantic URL, and decided before Prefect is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


PREFECT_IMPORTED = "<prefect was imported>"
# The console script's entry point, plus a note at exit when the command imported prefect.
_ENTRY = (
    "import atexit, sys\n"
    f"atexit.register(lambda: 'prefect' in sys.modules and sys.stderr.write('\\n{PREFECT_IMPORTED}\\n'))\n"
    "sys.argv[0] = 'evalduck'\n"
    "from flows.cli import main\n"
    "main()\n"
)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder with a valid two-row dataset (`data.jsonl`); the commands run there."""
    rows = [{"id": "a", "input": "hi", "output": "hello"}, {"id": "b", "input": "bye", "output": "see you"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def evalduck(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("EVALDUCK_DB", "EVALDUCK_PORT", "PREFECT_API_URL")}
    return subprocess.run(
        [sys.executable, "-c", _ENTRY, *args], cwd=cwd, capture_output=True, text=True, timeout=60,
        env={**environ, **env},
    )


def usage_error(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    """Assert a CLI-style usage error holding every `expected` text; returns its first line."""
    err = done.stderr
    assert done.returncode == 2, f"exit {done.returncode}\n{done.stdout}\n{err}"
    assert "Traceback" not in err and "pydantic.dev" not in err, err
    assert PREFECT_IMPORTED not in err, "the usage error was found only after prefect was imported:\n" + err
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("error: "), err
    for text in expected:
        assert text in lines[0], f"{text!r} not in {lines[0]!r}"
    assert done.stdout == ""
    return lines[0]


# ---- messages that need nothing but the command line: (test id, arguments, texts in the message) ------------

RUN = ("run", "data.jsonl")
SIMPLE = [
    ("judge-rpm-word", (*RUN, "--judge-rpm", "fast"), ("--judge-rpm must be a number, got 'fast'",)),
    # typer's own checks, said the same way
    ("concurrency-range", (*RUN, "--concurrency", "0"), ("--concurrency must be between 1 and 256, got 0",)),
    ("concurrency-word", (*RUN, "--concurrency", "many"), ("--concurrency must be a whole number, got 'many'",)),
    ("retries-range", (*RUN, "--retries", "11"), ("--retries must be between 0 and 10, got 11",)),
    ("unknown-option", (*RUN, "--bogus"), ("No such option: --bogus",)),
    ("missing-dataset-argument", ("run",), ("Missing argument", "dataset")),
    # results commands
    ("runs-limit-range", ("runs", "--limit", "0"), ("--limit must be at least 1, got 0",)),
    ("show-worst-range", ("show", "latest", "--worst", "-1"), ("--worst must be at least 0, got -1",)),
    ("compare-fail-below-range", ("compare", "a", "b", "--fail-below", "-0.5"),
     ("--fail-below must be at least 0, got -0.5",)),
    ("compare-items-word", ("compare", "a", "b", "--items", "all"), ("--items must be a whole number, got 'all'",)),
    ("sql-format", ("sql", "SELECT 1", "--format", "xml"), ("--format", "table, csv or json", "got 'xml'")),
    ("show-run-with-markup", ("show", "[/]"), ("no run with id or name '[/]'", "latest, previous")),
]


@pytest.mark.parametrize(("args", "expected"), [case[1:] for case in SIMPLE], ids=[case[0] for case in SIMPLE])
def test_usage_error(work: Path, args: tuple[str, ...], expected: tuple[str, ...]) -> None:
    usage_error(evalduck(work, *args), *expected)


def test_unknown_option_says_where_help_is(work: Path) -> None:
    done = evalduck(work, "run", "data.jsonl", "--bogus")
    assert done.stderr.strip().splitlines()[1:] == ["Try 'evalduck run --help' for help."]


# ---- --db -------------------------------------------------------------------------------------------------------


def test_evalduck_db_is_named_when_the_path_came_from_it(work: Path) -> None:
    db = work / "nowhere" / "evals.duckdb"
    usage_error(evalduck(work, "runs", EVALDUCK_DB=str(db)), f"EVALDUCK_DB (--db) '{db}': folder", "does not exist")


# ---- serve ----------------------------------------------------------------------------------------------------


def serve(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`evalduck serve` pointed at a server that is not there: should a check be missed, it fails at once
    instead of starting a Prefect server."""
    return evalduck(cwd, "serve", "--state-dir", str(cwd / "state"), *args,
                    **{"PREFECT_API_URL": "http://127.0.0.1:9/api", **env})


def test_serve_port_out_of_range(work: Path) -> None:
    usage_error(serve(work, "--port", "0"), "--port must be between 1 and 65535, got 0")


def test_serve_port_from_the_environment(work: Path) -> None:
    usage_error(serve(work, EVALDUCK_PORT="http"),
                "EVALDUCK_PORT (--port) must be a whole number, got 'http'")


def test_serve_timeout_out_of_range(work: Path) -> None:
    usage_error(serve(work, "--timeout", "0"), "--timeout must be at least 1, got 0")


def test_serve_outside_the_project(work: Path) -> None:
    usage_error(serve(work, "--project-dir", str(work)),
                f"--project-dir '{work}': holds no prefect.yaml")
    assert not (work / "state").exists()


def test_serve_prefect_file_that_is_missing(work: Path) -> None:
    usage_error(serve(work, "--prefect-file", "deploy.yaml"),
                "--prefect-file 'deploy.yaml': no such file")
