"""The results commands through typer's runner, and once through the installed `evalduck` script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalduck.flows.cli import app
from evalduck.flows.store import Store

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
runner = CliRunner()


def _run(store: Store, run_id: str, name: str, minutes: int, scores: list[float]) -> None:
    store.start_run(run_id, name, "qa.jsonl", "h1", {"scorers": ["tone-scorer"]}, started_at=T0 + timedelta(minutes=minutes))
    store.write_batch(
        run_id,
        items=[{"item_id": f"q{i}", "input": f"question {i}"} for i in range(len(scores))],
        scores=[{"item_id": f"q{i}", "scorer_id": "tone-scorer", "scorer_version": "1", "score": s}
                for i, s in enumerate(scores)],
    )
    store.finish_run(run_id, "completed")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three runs: a baseline, a clear regression (-0.3 on every item) and a slight improvement."""
    path = tmp_path_factory.mktemp("cli") / "evals.duckdb"
    store = Store(path)
    base = [0.8 + 0.01 * (i % 5) for i in range(30)]
    _run(store, "run-base", "baseline", 0, base)
    _run(store, "run-bad", "candidate", 1, [s - 0.3 + 0.005 * (i % 3) for i, s in enumerate(base)])
    _run(store, "run-good", "candidate", 2, [s + 0.01 for s in base])
    _run(store, "run-old", "old", -1, [0.5])  # oldest; a single item, plus a scorer the others lack
    store.write_scores("run-old", [{"item_id": "q0", "scorer_id": "legacy-scorer", "scorer_version": "1", "score": 1.0}])
    return path


def test_compare_names_scorers_of_one_run_only_and_ungated_ones(db: Path) -> None:
    code, out, _ = _cli(db, "compare", "run-old", "run-base", "--fail-below", "0.1")
    assert code == 0
    assert "Scored in run A only: legacy-scorer (not compared)" in out
    assert "Not gated (fewer than 2 items scored in both runs): tone-scorer" in out


def _cli(db: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--db", str(db), *args])
    return result.exit_code, result.stdout, result.stderr


def test_compare_exits_1_on_a_regression(db: Path) -> None:
    code, out, err = _cli(db, "compare", "run-base", "run-bad", "--fail-below", "0.05")
    assert code == 1, out + err
    assert "REGRESSION: tone-scorer" in err and "below -0.05" in err
    assert "-0.29" in out  # the paired delta is shown


def test_compare_exits_0_within_tolerance_or_without_gate(db: Path) -> None:
    assert _cli(db, "compare", "run-base", "run-bad", "--fail-below", "0.5")[0] == 0
    assert _cli(db, "compare", "run-base", "run-bad")[0] == 0
    code, out, _ = _cli(db, "compare", "run-base", "run-good", "--fail-below", "0")
    assert code == 0 and "OK: no scorer's 95% upper bound" in out


def test_compare_exits_2_on_usage_errors(db: Path) -> None:
    code, _, err = _cli(db, "compare", "run-base", "no-such-run", "--fail-below", "0.05")
    assert code == 2 and "no run with id or name 'no-such-run'" in err
    assert _cli(db, "compare", "run-base", "run-bad", "--fail-below", "-1")[0] == 2
    assert _cli(db, "compare", "run-base")[0] == 2


# A run of "nightly" whose process stopped after three cells, never finishing it (as a SIGKILL leaves it).
KILLED_RUN = """
import sys
from datetime import datetime, timezone
from evalduck.flows.store import Store
store = Store(sys.argv[1])
store.start_run("run-killed", "nightly", "qa.jsonl", "h1", {}, started_at=datetime(2026, 3, 2, tzinfo=timezone.utc),
                items=[{"item_id": f"q{i}", "input": f"question {i}"} for i in range(3)])
store.write_scores("run-killed", [{"item_id": f"q{i}", "scorer_id": "tone-scorer", "scorer_version": "1",
                                   "score": 0.9} for i in range(3)])
"""


def test_compare_refuses_a_run_that_did_not_complete_unless_allowed(tmp_path: Path) -> None:
    path = tmp_path / "evals.duckdb"
    _run(Store(path), "run-full", "nightly", 0, [0.8 + 0.01 * (i % 5) for i in range(30)])
    subprocess.run([sys.executable, "-c", KILLED_RUN, str(path)], check=True, timeout=120)
    code, out, err = _cli(path, "compare", "previous", "latest", "--fail-below", "0.05")
    assert code == 2 and out == "", out
    (line,) = err.strip().splitlines()
    for text in ("error: run B run-killed (nightly) = latest was interrupted (its process is gone), with 3 scored "
                 "cell(s) over 3 item(s)", "--resume run-killed", "--allow-partial"):
        assert text in line, line
    code, out, _ = _cli(path, "compare", "previous", "latest", "--fail-below", "0.05", "--allow-partial")
    assert code == 0 and "run B is interrupted" in out
    code, _, err = _cli(path, "compare", "run-killed", "run-full")  # either side, with or without a gate
    assert code == 2 and "run A run-killed (nightly) was interrupted" in err
    code, out, _ = _cli(path, "runs")
    assert code == 0 and "interrupted" in out


def test_run_references_latest_previous_name_and_id(db: Path) -> None:
    by_ref = _cli(db, "compare", "previous", "latest", "--items", "1")
    by_id = _cli(db, "compare", "run-bad", "run-good", "--items", "1")
    assert by_ref[0] == by_id[0] == 0 and by_ref[1] == by_id[1]
    assert "B = run-good  vs  A = run-bad" in by_ref[1]
    # a name means its newest run
    assert "B = run-good  vs  A = run-base" in _cli(db, "compare", "baseline", "candidate")[1]
    assert "run-good" in _cli(db, "show", "latest")[1]
    shown = _cli(db, "show", "baseline", "--worst", "2")[1]
    assert "run-base" in shown and "tone-scorer" in shown and "0.820" in shown
    assert _cli(db, "show", "missing")[0] == 2


def test_runs_lists_newest_first(db: Path) -> None:
    code, out, _ = _cli(db, "runs")
    assert code == 0
    assert out.index("run-good") < out.index("run-bad") < out.index("run-base")


def test_sql_binds_parameters_and_formats(db: Path) -> None:
    code, out, _ = _cli(
        db, "sql", "SELECT name, count(*) AS n FROM runs WHERE name = ? OR name = ? GROUP BY name ORDER BY name",
        "-p", "candidate", "-p", "x' OR '1'='1", "-f", "json",
    )
    assert code == 0 and json.loads(out) == [{"name": "candidate", "n": 2}]
    code, out, _ = _cli(db, "sql", "SELECT scorer_id, n_paired FROM compare_runs(previous_run(), latest_run())", "-f", "csv")
    assert code == 0 and out.splitlines() == ["scorer_id,n_paired", "tone-scorer,30"]
    code, _, err = _cli(db, "sql", "DELETE FROM runs")
    assert code == 2 and "read-only" in err.lower()


def test_installed_script_gates_ci_and_reads_evalduck_db(db: Path, tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("evalduck")
    env = {**os.environ, "EVALDUCK_DB": str(db)}
    proc = subprocess.run(
        [str(script), "compare", "baseline", "run-bad", "--fail-below", "0.1"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "REGRESSION" in proc.stderr
    unknown = subprocess.run([str(script), "--db", str(db), "show", "nope"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "no run with id or name 'nope'" in unknown.stderr


def test_results_commands_do_not_import_prefect() -> None:
    """`evalduck sql/runs/show/compare` must start fast: command modules keep prefect imports lazy."""
    code = "import sys, evalduck.flows.cli, evalduck.flows.store; sys.exit(1 if 'prefect' in sys.modules else 0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, "importing evalduck.flows.cli imported prefect" + proc.stderr


def test_the_cli_gate_and_the_regression_check_agree_on_one_paired_item(tmp_path: Path) -> None:
    """One item that dropped by 0.5: no interval, so neither the CI gate nor the nightly check fails."""
    from evalduck.flows.report.gate import gate

    db = tmp_path / "evals.duckdb"
    store = Store(db)
    _run(store, "before", "nightly", 0, [0.9])
    _run(store, "after", "nightly", 1, [0.4])
    comparison = store.compare("before", "after")
    assert comparison[0]["mean_delta"] < -0.4 and comparison[0]["ci_high"] is None
    code, out, err = _cli(db, "compare", "before", "after", "--fail-below", "0")
    assert code == 0, out + err
    assert "Not gated (fewer than 2 items scored in both runs): tone-scorer" in out
    verdict = gate(comparison, 0.0)  # what regression_check applies to the same rows
    assert verdict.regressed == [] and verdict.ungated == ["tone-scorer"]


def test_a_lower_is_better_scorer_fails_the_gate_when_it_rises(tmp_path: Path) -> None:
    """Hallucination up by ~0.3 on every item: the regression, said with its direction; its fall passes."""
    db = tmp_path / "evals.duckdb"
    store = Store(db)
    base = [0.1 + 0.01 * (i % 5) for i in range(10)]
    for run_id, minutes, scores in (("low", 0, base), ("high", 1, [s + 0.3 + 0.01 * (i % 2) for i, s in enumerate(base)])):
        store.start_run(run_id, "rag", "rag.jsonl", "h1", {}, started_at=T0 + timedelta(minutes=minutes),
                        directions={"hallucination-scorer": False})
        store.write_batch(run_id, items=[{"item_id": f"q{i}", "input": f"q {i}"} for i in range(10)],
                          scores=[{"item_id": f"q{i}", "scorer_id": "hallucination-scorer", "scorer_version": "1",
                                   "score": s} for i, s in enumerate(scores)])
        store.finish_run(run_id, "completed")
    code, out, err = _cli(db, "compare", "low", "high", "--fail-below", "0.1")
    assert code == 1, out + err
    assert "REGRESSION: hallucination-scorer" in err and "lower bound is above +0.100" in err
    assert "hallucination-scorer (lower is better)" in out and "0/10/0" in out  # every item counted as regressed
    code, out, err = _cli(db, "compare", "high", "low", "--fail-below", "0.1")
    assert code == 0 and "OK:" in out, out + err
    shown = _cli(db, "show", "high")[1]
    # the scorers table, the trend over the name's two runs, then its 5 worst items, which for this scorer are
    # the highest: q9 (0.45), never q0 (0.40)
    assert shown.count("hallucination-scorer (lower is better)") == 1 + 1 + 5, shown
    assert "q9" in shown and "q0" not in shown, shown


def test_show_lists_why_cells_were_skipped_and_the_items_rag_and_agent_fields(tmp_path: Path) -> None:
    db = tmp_path / "evals.duckdb"
    store = Store(db)
    store.start_run("r", "rag", "rag.jsonl", "h1", {}, items=[
        {"item_id": "q0", "input": "q", "context": ["p1", "p2"]},
        {"item_id": "q1", "input": "q", "expected_tool_order": ["search_flights", "book_flight"]},
        {"item_id": "q2", "input": "q"}])
    store.write_scores("r", [
        {"item_id": "q0", "scorer_id": "faithfulness-scorer", "scorer_version": "1", "score": 0.25},
        {"item_id": "q1", "scorer_id": "code-tool-call-accuracy-scorer", "scorer_version": "1", "score": 0.0},
        {"item_id": "q2", "scorer_id": "faithfulness-scorer", "scorer_version": "1", "status": "skipped",
         "reason": "faithfulness-scorer needs a context"},
        {"item_id": "q2", "scorer_id": "code-tool-call-accuracy-scorer", "scorer_version": "1", "status": "skipped",
         "reason": "needs a tool expectation"}])
    store.finish_run("r", "completed")
    code, out, _ = _cli(db, "show", "r")
    assert code == 0
    assert "Skipped cells" in out and "faithfulness-scorer needs a context" in out and "needs a tool expectation" in out
    assert "2 passage(s)" in out and "expects search_flights → book_flight" in out


@pytest.mark.parametrize("command", [["runs"], ["show", "latest"], ["compare", "a", "b"], ["sql", "SELECT 1"]])
def test_reading_a_missing_results_file_is_a_usage_error_and_creates_nothing(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "typo.duckdb"
    result = runner.invoke(app, ["--db", str(missing), *command])
    assert result.exit_code == 2, result.output
    assert "no such results file" in result.output and "typo.duckdb" in result.output
    assert not missing.exists()


def _all_scorers_db(path: Path) -> Path:
    """Two runs of "wide" with every prebuilt scorer (the three lower-is-better ones so marked), one skipped cell
    with a long reason, item ids with RAG fields: every table `show`, `runs` and `compare` print is filled."""
    from evalduck.scorers import PREBUILT

    store = Store(path)
    for k, run_id in enumerate(("wide-a", "wide-b")):
        store.start_run(run_id, "wide", "datasets/rag.jsonl", "h1", {}, started_at=T0 + timedelta(minutes=k),
                        directions={i: p.higher_is_better for i, p in PREBUILT.items()},
                        items=[{"item_id": f"rag-{i:02d}", "input": f"question {i}", "context": ["p1", "p2"]}
                               for i in range(4)])
        store.write_scores(run_id, [
            {"item_id": f"rag-{i:02d}", "scorer_id": sid, "scorer_version": "1", "judge_model": "openai/gpt-4o-mini",
             "score": round(0.1 + 0.2 * i + 0.01 * n + 0.05 * k, 3), "reason": "The score follows the verdicts above."}
            for i in range(3) for n, sid in enumerate(PREBUILT)] + [
            {"item_id": "rag-03", "scorer_id": sid, "scorer_version": "1", "status": "skipped",
             "reason": f"{sid} skipped: no judge model. Set EVALDUCK_JUDGE_MODEL (e.g. openai/gpt-4o-mini)."}
            for sid in PREBUILT])
        store.finish_run(run_id, "completed")
    return path


def _in_terminal(args: list[str], columns: int) -> str:
    """What ``args`` prints on a terminal (a pseudo-terminal) of ``columns`` columns, colours left out."""
    import fcntl
    import pty
    import re
    import struct
    import termios

    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=side, stderr=subprocess.PIPE, env=env)
    os.close(side)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode()).replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [80, 100, 160])
def test_tables_never_cut_a_scorer_id_at_normal_widths(tmp_path: Path, columns: int) -> None:
    """At 100 columns `show rag` cut two ids to `contex…`: every table of `show`, `runs` and `compare` (the
    installed script on a terminal of that width) shows each scorer id whole and fits the width."""
    import re

    from evalduck.scorers import PREBUILT

    db = _all_scorers_db(tmp_path / "evals.duckdb")
    script = str(Path(sys.executable).with_name("evalduck"))
    for command in (["show", "wide", "--worst", "1"], ["compare", "wide-a", "wide-b", "--items", "1"], ["runs"]):
        out = _in_terminal([script, "--db", str(db), *command], columns)
        lines = out.splitlines()
        assert max(len(line) for line in lines) <= columns, out
        assert "…" not in out, out
        for sid in PREBUILT if command[0] != "runs" else ():
            assert any(re.search(rf"(?<![\w-]){re.escape(sid)}(?![\w-])", line) for line in lines), (sid, out)
        if command[0] == "runs":
            assert "wide-a" in out and "wide-b" in out, out


@pytest.mark.parametrize("columns", [80, 100, 160])
def test_the_runs_summary_table_never_cuts_a_scorer_id(columns: int) -> None:
    """The table `evalduck run` prints at its end, with the previous run's delta and interval."""
    import re

    from rich.console import Console

    from evalduck.flows.report.summary import summary_table
    from evalduck.flows.run.finish import EvalResult
    from evalduck.scorers import PREBUILT

    row = {"higher_is_better": True, "mean": 0.61234, "scored": 24, "errored": 0, "skipped": 0,
           "judge_tokens": 123456, "judge_cost_usd": 0.0123}
    result = EvalResult(run_id="253511c4-be98-43f0-b75f-ef88ad6d1a31", name="rag", db="evals.duckdb", scores={},
                        summary={"totalItems": 24, "scorers": {
                            sid: {**row, "higher_is_better": p.higher_is_better} for sid, p in PREBUILT.items()}},
                        comparison=[{"scorer_id": sid, "mean_delta": -0.0125, "ci_low": -0.05, "ci_high": 0.025}
                                    for sid in PREBUILT])
    console = Console(width=columns, record=True, file=open(os.devnull, "w"))
    console.print(summary_table(result, console))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= columns and "…" not in text, text
    assert "errored" in text and "skipped" in text, text  # the counts stay; tokens, cost, the interval go first
    for sid in PREBUILT:
        assert re.search(rf"(?<![\w-]){re.escape(sid)}(?![\w-])", text), (sid, text)


def test_show_says_what_each_of_the_sixteen_scorers_measures(tmp_path: Path) -> None:
    """A run recorded without the scorers' descriptions (before issue 23) gets the catalogue's line, with the
    direction the run stored (hallucination, bias and toxicity: lower is better)."""
    from evalduck.flows.report.measures import measures_line
    from evalduck.scorers import PREBUILT

    code, out, _ = _cli(_all_scorers_db(tmp_path / "evals.duckdb"), "show", "wide", "--worst", "0")
    assert code == 0
    flat = " ".join(out.split())
    for sid, p in PREBUILT.items():
        assert p.description and f"{sid} {measures_line(p.description, p.higher_is_better)}" in flat, sid
    assert "0 with no opinions); lower is better" in flat  # bias
