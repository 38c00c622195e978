"""Usage errors of every command: exit 2, one or two lines on stderr (`error: ...` and where help is), naming
the option as typed, the value given and the choices or the rule, with no traceback, no pydantic URL, and
decided before Prefect is imported.

The matrix (``SIMPLE``) runs through typer's ``CliRunner`` in one fresh interpreter, which checks after each
command that prefect is still not imported; the other tests run the CLI's entry point in a subprocess each,
and one the installed `evalduck` script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalduck.flows.store import Store

PREFECT_IMPORTED = "<prefect was imported>"
# The console script's entry point, plus a note at exit when the command imported prefect.
_ENTRY = (
    "import atexit, sys\n"
    f"atexit.register(lambda: 'prefect' in sys.modules and sys.stderr.write('\\n{PREFECT_IMPORTED}\\n'))\n"
    "sys.argv[0] = 'evalduck'\n"
    "from evalduck.flows.cli import main\n"
    "main()\n"
)


def _work_folder(folder: Path) -> Path:
    """``folder`` with a valid two-row dataset (`data.jsonl`) and an empty results file."""
    rows = [{"id": "a", "input": "hi", "output": "hello"}, {"id": "b", "input": "bye", "output": "see you"}]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    Store(folder / "evals.duckdb")
    return folder


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The folder the commands run in (``_work_folder``)."""
    return _work_folder(tmp_path)


def evalduck(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("EVALDUCK_DB", "EVALDUCK_PORT", "PREFECT_API_URL")}
    return subprocess.run(
        [sys.executable, "-c", _ENTRY, *args], cwd=cwd, capture_output=True, text=True, timeout=60,
        env={**environ, **env},
    )


# Every command of the matrix through CliRunner in this one interpreter: (exit code, stdout, stderr + the note).
_BATCH = (
    "import json, sys\n"
    "from typer.testing import CliRunner\n"
    "from evalduck.flows.cli import app\n"
    "runner, done = CliRunner(), []\n"
    "for args in json.load(sys.stdin):\n"
    "    r = runner.invoke(app, args, prog_name='evalduck')\n"
    f"    note = '\\n{PREFECT_IMPORTED}\\n' if 'prefect' in sys.modules else ''\n"
    "    done.append([r.exit_code, r.stdout, r.stderr + note])\n"
    "print(json.dumps(done))\n"
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

SCORERS = ("'answer-relevancy-scorer'", "'tone-scorer'", "'textual-difference-scorer'")
RUN = ("run", "data.jsonl")
SIMPLE = [
    # run: options that EvalConfig checks, named by the one helper
    ("unknown-scorer", (*RUN, "--scorer", "no-such-scorer"),
     ("--scorer must be one of", *SCORERS, "got 'no-such-scorer'")),
    ("short-scorer-option", (*RUN, "-s", "tone"), ("--scorer must be one of", "got 'tone'; did you mean 'tone-scorer'?")),
    ("mistyped-scorer", (*RUN, "-s", "faithfullness-scorer"),
     ("--scorer must be one of", "got 'faithfullness-scorer'; did you mean 'faithfulness-scorer'?")),
    ("mistyped-command", ("shwo", "latest"), ("No such command 'shwo'. Did you mean 'show'?",)),  # click's own
    ("scorer-twice", (*RUN, "-s", "tone-scorer", "-s", "tone-scorer"), ("--scorer 'tone-scorer': given twice",)),
    ("scorer-import-path", (*RUN, "-s", "no_such_module:make"),
     ("--scorer 'no_such_module:make': cannot import module 'no_such_module'",)),
    ("judge-rpm-zero", (*RUN, "--judge-rpm", "0"), ("--judge-rpm must be greater than 0, got 0",)),
    ("judge-rpm-word", (*RUN, "--judge-rpm", "fast"), ("--judge-rpm must be a number, got 'fast'",)),
    # run: typer's own checks, said the same way
    ("concurrency-range", (*RUN, "--concurrency", "0"), ("--concurrency must be between 1 and 256, got 0",)),
    ("concurrency-word", (*RUN, "--concurrency", "many"), ("--concurrency must be a whole number, got 'many'",)),
    ("retries-range", (*RUN, "--retries", "11"), ("--retries must be between 0 and 10, got 11",)),
    ("unknown-option", (*RUN, "--bogus"), ("No such option: --bogus",)),
    ("missing-dataset-argument", ("run",), ("Missing argument", "dataset")),
    # run: targets, resolved before Prefect starts
    ("target-not-importable", (*RUN, "--target", "no_such_module_xyz:answer"),
     ("--target 'no_such_module_xyz:answer': cannot import module 'no_such_module_xyz'",
      "No module named 'no_such_module_xyz'", "the current folder", "is on the import path, but it holds no "
      "no_such_module_xyz.py or no_such_module_xyz/: run from the folder that holds it, or add that folder to "
      "PYTHONPATH")),
    ("target-given-as-a-file", (*RUN, "--target", "agents/my_agent.py:answer"),
     ("--target 'agents/my_agent.py:answer': give the module's import name, not its file: "
      "'agents.my_agent:answer'",)),
    ("target-no-such-function", (*RUN, "--target", "os:no_such_function"),
     ("--target 'os:no_such_function': module 'os' has no attribute 'no_such_function'",)),
    ("target-not-callable", (*RUN, "--target", "os:sep"), ("--target 'os:sep': 'sep' is not callable",)),
    ("target-model-without-model", (*RUN, "--target", "model:"),
     ("--target 'model:': needs a litellm model after 'model:'", "'model:openai/gpt-4o-mini'")),
    ("target-of-neither-form", (*RUN, "--target", "answer"),
     ("--target 'answer': expected 'module:function' or 'model:<litellm model>'",)),
    ("target-with-markup", (*RUN, "--target", "a[b]c:f"), ("--target 'a[b]c:f': cannot import module 'a[b]c'",)),
    ("target-with-a-closing-tag", (*RUN, "--target", "a[/]b:f"), ("--target 'a[/]b:f': give the module's import name",)),
    # run: the dataset path
    ("dataset-missing", ("run", "missing.jsonl"), ("DATASET 'missing.jsonl': no such dataset file",)),
    ("dataset-with-markup", ("run", "[bold]x[/].jsonl"), ("DATASET '[bold]x[/].jsonl': no such dataset file",)),
    # results commands
    ("runs-limit-range", ("runs", "--limit", "0"), ("--limit must be at least 1, got 0",)),
    ("show-worst-range", ("show", "latest", "--worst", "-1"), ("--worst must be at least 0, got -1",)),
    ("compare-fail-below-range", ("compare", "a", "b", "--fail-below", "-0.5"),
     ("--fail-below must be at least 0, got -0.5",)),
    ("compare-items-word", ("compare", "a", "b", "--items", "all"), ("--items must be a whole number, got 'all'",)),
    ("sql-format", ("sql", "SELECT 1", "--format", "xml"), ("--format", "table, csv or json", "got 'xml'")),
    ("show-run-with-markup", ("show", "[/]"), ("no run with id or name '[/]'", "latest, previous")),
]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every ``SIMPLE`` command's outcome, by test id, from one interpreter run in a ``work``-like folder."""
    folder = _work_folder(tmp_path_factory.mktemp("matrix"))
    environ = {k: v for k, v in os.environ.items() if k not in ("EVALDUCK_DB", "EVALDUCK_PORT", "PREFECT_API_URL")}
    ran = subprocess.run([sys.executable, "-c", _BATCH], cwd=folder, capture_output=True, text=True, timeout=120,
                         input=json.dumps([list(case[1]) for case in SIMPLE]), env=environ)
    assert ran.returncode == 0, ran.stderr
    return {case[0]: subprocess.CompletedProcess(list(case[1]), code, out, err)
            for case, (code, out, err) in zip(SIMPLE, json.loads(ran.stdout), strict=True)}


@pytest.mark.parametrize("case", SIMPLE, ids=[case[0] for case in SIMPLE])
def test_usage_error(matrix: dict[str, subprocess.CompletedProcess[str]], case: tuple) -> None:
    usage_error(matrix[case[0]], *case[2])


def test_a_scorer_id_close_to_none_gets_no_suggestion(work: Path) -> None:
    assert usage_error(evalduck(work, *RUN, "-s", "no-such-scorer")).endswith("got 'no-such-scorer'")


def test_a_mistyped_command_through_the_installed_script(work: Path) -> None:
    """`evalduck rn ...` is no `run` for the launcher (flows/launch.py), so the CLI says what it is."""
    done = subprocess.run([str(Path(sys.executable).with_name("evalduck")), "rn", "data.jsonl"], cwd=work,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("error: No such command 'rn'. Did you mean 'run'"), done.stderr


def test_unknown_option_says_where_help_is(work: Path) -> None:
    done = evalduck(work, "run", "data.jsonl", "--bogus")
    assert done.stderr.strip().splitlines()[1:] == ["Try 'evalduck run --help' for help."]


def test_two_bad_options_get_a_line_each(work: Path) -> None:
    done = evalduck(work, "run", "data.jsonl", "--scorer", "nope", "--judge-rpm", "-5")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "pydantic.dev" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("error: --scorer must be one of") and lines[0].endswith("got 'nope'")
    assert lines[1] == "error: --judge-rpm must be greater than 0, got -5"


def test_target_module_that_fails_while_importing(work: Path) -> None:
    (work / "broken_agent.py").write_text("raise RuntimeError('missing API key')\n")
    done = evalduck(work, "run", "data.jsonl", "--target", "broken_agent:answer", PYTHONPATH=str(work))
    usage_error(done, "--target 'broken_agent:answer': cannot import module 'broken_agent'",
                "RuntimeError: missing API key")


def test_target_module_in_the_current_folder_is_imported(work: Path) -> None:
    """As the README says: `--target my_agent:fn` finds ./my_agent.py without PYTHONPATH (the attribute
    error shows the module was imported)."""
    (work / "my_agent.py").write_text("def answer(question):\n    return question\n")
    usage_error(evalduck(work, "run", "data.jsonl", "--target", "my_agent:nope", PYTHONPATH=""),
                "--target 'my_agent:nope': module 'my_agent' has no attribute 'nope'")


def test_dataset_that_is_a_folder(work: Path) -> None:
    (work / "datasets").mkdir()
    usage_error(evalduck(work, "run", "datasets"), "DATASET 'datasets': is a folder, not a dataset file",
                ".jsonl, .ndjson, .json, .csv, .parquet")


def test_dataset_with_an_unknown_extension(work: Path) -> None:
    (work / "data.txt").write_text("hello\n")
    usage_error(evalduck(work, "run", "data.txt"), "DATASET 'data.txt': unknown dataset format '.txt'",
                "use one of .jsonl, .ndjson, .json, .csv, .parquet")


def test_bad_rows_are_no_usage_error(work: Path) -> None:
    """Errors in the data keep exit 1 and their file:line messages (markup in the data is printed as is)."""
    (work / "bad.jsonl").write_text('{"input": "ok", "output": "fine"}\n{"input": ["[/]"], "output": "x"}\n')
    done = evalduck(work, "run", "bad.jsonl")
    assert done.returncode == 1, done.stderr
    assert "bad.jsonl line 2: `input[0]` must be a chat message" in done.stderr and "got '[/]'" in done.stderr
    assert "Traceback" not in done.stderr and PREFECT_IMPORTED not in done.stderr


# ---- run: --db and --resume -----------------------------------------------------------------------------------


def test_db_in_a_folder_that_does_not_exist(work: Path) -> None:
    db = work / "nowhere" / "evals.duckdb"
    usage_error(evalduck(work, "--db", str(db), "run", "data.jsonl"),
                f"--db '{db}': folder {work / 'nowhere'} does not exist")


def test_db_that_is_a_folder(work: Path) -> None:
    usage_error(evalduck(work, "--db", str(work), "run", "data.jsonl"),
                f"--db '{work}': is a folder, not a DuckDB file")


def test_evalduck_db_is_named_when_the_path_came_from_it(work: Path) -> None:
    db = work / "nowhere" / "evals.duckdb"
    usage_error(evalduck(work, "runs", EVALDUCK_DB=str(db)), f"EVALDUCK_DB (--db) '{db}': folder", "does not exist")


def test_resume_with_no_database_yet(work: Path) -> None:
    (work / "evals.duckdb").unlink()
    usage_error(evalduck(work, "run", "data.jsonl", "--resume", "nightly"),
                "--resume 'nightly': no run to resume:", "evals.duckdb does not exist yet")
    assert not (work / "evals.duckdb").exists()


def test_resume_with_a_run_that_is_not_in_the_database(work: Path) -> None:
    store = Store(work / "evals.duckdb")
    store.start_run("run-1", "nightly", "data.jsonl", "h", {})
    store.finish_run("run-1", "completed")
    usage_error(evalduck(work, "run", "data.jsonl", "--resume", "nigthly"),
                "--resume:", "no run with id or name 'nigthly'", "latest, previous", "Recent runs: run-1 (nightly)")


def test_resume_with_another_dataset_is_refused_naming_both(work: Path) -> None:
    from evalduck.flows.inputs.datasets import load_dataset

    first = load_dataset(work / "data.jsonl")
    store = Store(work / "evals.duckdb")
    store.start_run("run-1", "nightly", "data.jsonl", first.hash, {}, items=[i.store_record() for i in first.items])
    store.finish_run("run-1", "failed")
    (work / "more.jsonl").write_text((work / "data.jsonl").read_text() + '{"id": "c", "input": "new", "output": "x"}\n')
    line = usage_error(evalduck(work, "run", "more.jsonl", "--resume", "nightly"),
                       "--resume: run run-1 (nightly) was made from data.jsonl", "more.jsonl (hash",
                       "has 1 item(s) not in the run and lacks 0 of its 2", "without --resume")
    assert first.hash[:12] in line
    assert store.sql("SELECT count(*) FROM items").rows == [(2,)]  # nothing was added to the run


def test_resume_on_a_file_that_is_not_duckdb_is_no_usage_error(work: Path) -> None:
    (work / "notes.duckdb").write_text("not a database [/]\n")
    done = evalduck(work, "--db", "notes.duckdb", "run", "data.jsonl", "--resume", "nightly")
    assert done.returncode == 1 and "not a valid DuckDB database file" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and PREFECT_IMPORTED not in done.stderr


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


# ---- the installed script -------------------------------------------------------------------------------------


def test_installed_script_reports_usage_errors_the_same_way(work: Path) -> None:
    script = Path(sys.executable).with_name("evalduck")
    done = subprocess.run([str(script), "run", "data.jsonl", "--scorer", "nope"], cwd=work, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines()[1:] == ["Try 'evalduck run --help' for help."]
    assert done.stderr.startswith("error: --scorer must be one of 'answer-relevancy-scorer'")
