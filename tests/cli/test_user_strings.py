"""User strings (run names, ids, item ids, scorer ids, reasons, errors, SQL values) reach the terminal as
typed: rich markup in them neither crashes a command nor is applied, emoji codes stay text, and control
characters (an ANSI escape, a NUL) are shown as escapes instead of being sent to the terminal."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from evalduck.flows.cli import app
from evalduck.flows.run.progress import RichProgress
from evalduck.flows.store import Store

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
ESC = "\x1b"
# Item ids as the probe wrote them: a closing tag, a hyperlink, an ANSI colour, an emoji code and a NUL.
ITEM_IDS = ["[/]", "[link=http://127.0.0.1:1/]click[/link]", f"esc{ESC}[31mred{ESC}[0m", ":smile: [bold]b[/bold]",
            "nul\x00tab\there"]
SCORER = "tone-scorer [v2]"  # scorer ids are whatever the Python API was given
runner = CliRunner()


def _run(store: Store, run_id: str, name: str, minutes: int, delta: float) -> None:
    store.start_run(run_id, name, "[red]data[/red].jsonl", "h1", {}, started_at=T0 + timedelta(minutes=minutes))
    store.write_batch(
        run_id,
        items=[{"item_id": item, "input": f"question [/] {i}"} for i, item in enumerate(ITEM_IDS)],
        scores=[{"item_id": item, "scorer_id": SCORER, "scorer_version": "[/]",
                 "score": 0.9 - delta * (1 + 0.1 * (i % 2)), "reason": f"line one [/]\nline two {ESC}[2J"}
                for i, item in enumerate(ITEM_IDS)],
    )
    store.write_scores(run_id, [{"item_id": ITEM_IDS[0], "scorer_id": "error-scorer", "scorer_version": "1",
                                 "status": "error", "error": "boom [/] :smile:"}])
    store.finish_run(run_id, "completed")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("strings") / "evals.duckdb"
    store = Store(path)
    _run(store, "run-a", "[/]", 0, 0.0)
    _run(store, "run-b", "gpt-4o [baseline]", 1, 0.5)  # a drop on every item: a regression
    return path


def _cli(db: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--db", str(db), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def _shown_literally(text: str) -> None:
    assert ESC not in text and "\x00" not in text, repr(text)
    assert "😄" not in text, text  # an emoji code is no emoji


def test_runs_lists_names_as_typed(db: Path) -> None:
    code, out, err = _cli(db, "runs")
    assert code == 0, err
    assert "│ [/]" in out and "gpt-4o [baseline]" in out and "[red]data[/red].jsonl" in out
    _shown_literally(out)


def test_show_prints_ids_reasons_and_errors_as_typed(db: Path) -> None:
    code, out, err = _cli(db, "show", "gpt-4o [baseline]", "--worst", "10")
    assert code == 0, err
    assert "name=gpt-4o [baseline]" in out and "dataset=[red]data[/red].jsonl" in out
    for shown in ("[link=http://127.0.0.1:1/]click[/link]", "esc\\x1b[31mred\\x1b[0m", ":smile: [bold]b[/bold]",
                  "nul\\x00tab\\there", "tone-scorer [v2]", "boom [/] :smile:", "line two \\x1b[2J"):
        assert shown in out, shown
    assert "line one [/]" in out  # a reason keeps its own line break (one cell, two lines)
    _shown_literally(out)


def test_compare_items_and_gate_do_not_crash_on_markup(db: Path) -> None:
    code, out, err = _cli(db, "compare", "[/]", "gpt-4o [baseline]", "--items", "5")
    assert code == 0, err  # exit 1 would read as a regression to a CI gate
    assert "tone-scorer [v2]: worst items" in out and "B = run-b  vs  A = run-a" in out
    assert "esc\\x1b[31mred\\x1b[0m" in out and "[link=http://127.0.0.1:1/]click[/link]" in out
    _shown_literally(out)
    code, out, err = _cli(db, "compare", "[/]", "gpt-4o [baseline]", "--fail-below", "0.01")
    assert code == 1 and "REGRESSION: tone-scorer [v2]: " in err, out + err


def test_unknown_run_and_sql_values_are_shown_as_typed(db: Path) -> None:
    code, _, err = _cli(db, "show", f":smile: [/] {ESC}[31m")
    assert code == 2 and "no run with id or name ':smile: [/] \\x1b[31m'" in err, err
    _shown_literally(err)
    code, out, err = _cli(db, "sql", "SELECT '[/]' AS \"[b]col\", ? AS v", "-p", f"{ESC}]8;;http://x{ESC}\\")
    assert code == 0, err
    assert "[b]col" in out and "│ [/]" in out and "\\x1b]8;;http://x\\x1b\\" in out
    _shown_literally(out)
    code, _, err = _cli(db, "sql", "SELECT * FROM \"[/]\"")
    assert code == 2 and 'Table with name [/] does not exist' in err, err


def test_progress_notes_are_literal() -> None:
    buffer = io.StringIO()
    RichProgress(Console(file=buffer, width=200)).note(f"scorer [/] skipped :smile: {ESC}[31m")
    assert buffer.getvalue() == "scorer [/] skipped :smile: \\x1b[31m\n"


def test_installed_script_lists_a_run_named_with_markup(db: Path) -> None:
    """The probe's case, as a user meets it: after one run named `[/]`, `evalduck runs` kept failing."""
    script = Path(sys.executable).with_name("evalduck")
    done = subprocess.run([str(script), "--db", str(db), "runs"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "[/]" in done.stdout and "gpt-4o [baseline]" in done.stdout
    _shown_literally(done.stdout)


def test_stop_names_a_state_folder_with_markup(tmp_path: Path) -> None:
    state = tmp_path / "state [/]"  # a folder "state [" holding "]"
    state.mkdir(parents=True)
    result = runner.invoke(app, ["stop", "--state-dir", str(state)])
    assert result.exit_code == 0, repr(result.exception)
    assert f"Nothing to stop: no {state / 'serve.json'}." in result.stdout.replace("\n", "")
