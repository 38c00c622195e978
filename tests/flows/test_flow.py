"""The flow end to end: validation before any call, skipped judge scorers, large in-memory data, the UI
form of run_eval_config, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flow_helpers import judge_scorer, rows
from typer.testing import CliRunner

from evalduck.flows import EvalConfig, run_eval_config, run_evals
from evalduck.flows.inputs.datasets import DatasetError
from evalduck.flows.store import Store
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_bad_row_fails_before_any_call(judge: FakeOpenAIServer, workdir: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(r) for r in rows(3)] + [json.dumps({"id": "x", "output": "no input"})]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=rf"{path} line 4 \(item 'x'\): missing `input`"):
        run_evals(str(path), scorers=[judge_scorer(judge)], **workdir)
    assert judge.request_count == 0
    no_output = [{"id": "a", "input": "q"}]
    with pytest.raises(DatasetError, match=r"row 1 \(item 'a'\): missing `output`"):
        run_evals(no_output, scorers=[judge_scorer(judge)], **workdir)
    assert judge.request_count == 0


def test_no_judge_model_skips_answer_relevancy(workdir: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALDUCK_JUDGE_MODEL", raising=False)
    result = run_evals(rows(3), scorers=["answer-relevancy-scorer", "tone-scorer"], **workdir)
    assert result.summary["scorers"]["answer-relevancy-scorer"]["skipped"] == 3
    assert result.scores["answer-relevancy-scorer"] is None
    assert result.summary["scorers"]["tone-scorer"]["scored"] == 3
    reasons = Store(workdir["db"]).sql("SELECT DISTINCT reason FROM scores WHERE status = 'skipped'").rows
    assert len(reasons) == 1 and "EVALDUCK_JUDGE_MODEL" in reasons[0][0]


def test_large_in_memory_dataset(workdir: dict[str, str]) -> None:
    data = [{"input": f"Question number {i}?", "output": f"Answer number {i}, happily and at length.", "groundTruth": f"Answer {i}"}
            for i in range(5000)]
    reported = run_evals.serialize_parameters({"data": data, "scorers": ["tone-scorer"]})
    assert reported["data"] == "<5000 rows in memory>"
    assert len(json.dumps(data)) > 512 * 1024  # what Prefect would refuse as a parameter
    result = run_evals(data, scorers=["tone-scorer", "textual-difference-scorer"], **workdir)
    assert result.summary["totalItems"] == 5000
    assert {s["scored"] for s in result.summary["scorers"].values()} == {5000}
    store = Store(workdir["db"])
    (count,) = store.sql("SELECT count(*) FROM scores WHERE run_id = ?", [result.run_id]).rows[0]
    assert count == 10000
    # the run's end is written with its last results
    (status, finished, items) = store.sql(
        "SELECT status, finished_at IS NOT NULL, (SELECT count(*) FROM items WHERE run_id = runs.run_id) "
        "FROM runs WHERE run_id = ?", [result.run_id]).rows[0]
    assert (status, finished, items) == ("completed", True, 5000)


def test_run_eval_config_form_and_run(judge: FakeOpenAIServer, workdir: dict[str, str], tmp_path: Path) -> None:
    schema = run_eval_config.parameters.model_dump()
    config_schema = schema["definitions"]["EvalConfig"]
    assert {"dataset", "scorers", "target", "judge_model", "name", "advanced"} <= set(config_schema["properties"])
    assert {"concurrency", "refresh"} <= set(config_schema["properties"]["advanced"]["anyOf"][1]["properties"])
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows(2)) + "\n")
    config = EvalConfig(dataset=str(path), scorers=[judge_scorer(judge), "textual-difference-scorer"],
                        name="cfg", concurrency=2, **workdir)
    result = run_eval_config(config)
    assert result.summary["scorers"]["answer-relevancy-scorer"]["scored"] == 2
    stored = Store(workdir["db"]).sql("SELECT config FROM runs WHERE run_id = ?", [result.run_id]).rows[0][0]
    assert json.loads(stored)["name"] == "cfg"


def test_cli_run_prints_the_summary_table(judge: FakeOpenAIServer, tmp_path: Path) -> None:
    from evalduck.flows.cli import app

    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows(3)) + "\n")
    db = tmp_path / "cli.duckdb"
    args = ["--db", str(db), "run", str(path), "--scorer", "answer-relevancy-scorer", "--scorer", "tone-scorer",
            "--judge-model", "openai/fake-judge", "--judge-api-base", judge.base_url, "--name", "cli",
            "--cache-dir", str(tmp_path / "cache")]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "answer-relevancy-scorer" in first.output and "1.000" in first.output
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "Δ prev" in second.output and "+0.000" in second.output  # compared with the previous "cli" run
    bad = CliRunner().invoke(app, ["--db", str(db), "run", str(tmp_path / "missing.jsonl")])
    assert bad.exit_code == 2 and "no such dataset file" in bad.output  # a usage error, before Prefect starts
