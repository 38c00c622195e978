"""The deployments of prefect.yaml on a real server and worker: runs created the way the UI creates them
and runs created by the scheduler, whose rows are read back from the DuckDB file the worker wrote; and
the regression check failing a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from e2e_harness import SMOKE_INTERVAL_S, Stack, jsonl, wait_for
from prefect.client.schemas.objects import State
from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

from evalduck.flows.config import EvalConfig, ScorerSpec
from evalduck.flows.regression_flow import regression_check
from evalduck.flows.store import Store
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.e2e

DEMO = Path(__file__).resolve().parents[2] / "datasets" / "demo.jsonl"


def demo_item_count() -> int:
    return sum(1 for line in DEMO.read_text().splitlines() if line.strip())


def store_rows(stack: Stack, query: str, params: list[Any]) -> list[dict[str, Any]]:
    return Store(stack.db_path).sql(query, params).records()


def test_run_created_through_the_api_with_custom_parameters_lands_in_duckdb(stack: Stack) -> None:
    deployment = stack.api.deployment("demo")
    assert deployment["parameters"]["config"]["name"] == "demo"
    parameters = {"config": {"dataset": "datasets/demo.jsonl", "scorers": [{"id": "tone-scorer"}], "name": "e2e-api"}}

    created = stack.api.create_flow_run(deployment["id"], parameters)
    run = stack.api.wait_terminal(created["id"])

    assert run["state_type"] == "COMPLETED", f"{run['state']}\n{stack.worker_log()[-3000:]}"
    assert run["parameters"]["config"]["name"] == "e2e-api"
    (stored,) = store_rows(stack, "SELECT run_id, status, flow_run_id FROM runs WHERE name = ?", ["e2e-api"])
    assert stored["status"] == "completed"
    assert stored["flow_run_id"] == created["id"]
    scores = store_rows(
        stack, "SELECT scorer_id, status, count(*) AS n FROM scores WHERE run_id = ? GROUP BY ALL", [stored["run_id"]]
    )
    assert scores == [{"scorer_id": "tone-scorer", "status": "scored", "n": demo_item_count()}]
    artifacts = {artifact["key"]: artifact["type"] for artifact in stack.api.artifacts(created["id"])}
    assert artifacts.get("evalduck-e2e-api-summary") == "table", f"no summary table on the flow run page: {artifacts}"


def test_a_module_function_target_is_found_in_the_project_folder_by_the_worker(stack: Stack) -> None:
    """The flow run's process starts elsewhere and enters the project folder (prefect.yaml's pull step): its
    `module:function` target (the shipped bot, examples/support_bots.py) is imported from there."""
    deployment = stack.api.deployment("demo")
    parameters = {"config": {"dataset": "datasets/demo.jsonl", "scorers": [{"id": "tone-scorer"}], "name": "e2e-bot",
                             "target": "examples.support_bots:topic_bot",
                             "target_system_prompt": "Answer in one short sentence."}}
    run = stack.api.wait_terminal(stack.api.create_flow_run(deployment["id"], parameters)["id"])
    assert run["state_type"] == "COMPLETED", f"{run['state']}\n{stack.worker_log()[-3000:]}"
    (stored,) = store_rows(stack, "SELECT count(*) AS n, count(i.target_latency_s) AS timed, "
                                  "count(*) FILTER (WHERE i.output::VARCHAR LIKE '%.\"' AND i.output::VARCHAR NOT LIKE "
                                  "'%. %') AS one_sentence FROM items i JOIN runs r USING (run_id) WHERE r.name = ?",
                           ["e2e-bot"])
    assert stored == {"n": demo_item_count(), "timed": demo_item_count(), "one_sentence": demo_item_count()}


def test_a_judge_scorer_run_by_the_worker_sends_its_requests_through_the_judge_process(stack: Stack) -> None:
    """The flow run's process (started by the worker with `python -m prefect.engine`) spawns the judge child
    and scores every item through it."""
    deployment = stack.api.deployment("demo")
    with FakeOpenAIServer() as judge:
        spec = {"id": "answer-relevancy-scorer",
                "options": {"model": "openai/fake-judge", "api_base": judge.base_url, "timeout": 10}}
        parameters = {"config": {"dataset": "datasets/demo.jsonl", "scorers": [spec], "name": "e2e-judge"}}
        created = stack.api.create_flow_run(deployment["id"], parameters)
        run = stack.api.wait_terminal(created["id"])
        requests = judge.request_count
    assert run["state_type"] == "COMPLETED", f"{run['state']}\n{stack.worker_log()[-3000:]}"
    (stored,) = store_rows(stack, "SELECT run_id FROM runs WHERE name = ?", ["e2e-judge"])
    scores = store_rows(
        stack, "SELECT scorer_id, status, count(*) AS n FROM scores WHERE run_id = ? GROUP BY ALL", [stored["run_id"]]
    )
    assert scores == [{"scorer_id": "answer-relevancy-scorer", "status": "scored", "n": demo_item_count()}]
    assert requests >= 2 * (demo_item_count() - 1)  # preprocess + analyze (+ reason) per non-empty output


def test_interval_schedule_creates_runs_that_complete(stack: Stack) -> None:
    deployment = stack.api.deployment("smoke")
    (schedule,) = deployment["schedules"]
    assert schedule["schedule"]["interval"] == SMOKE_INTERVAL_S
    assert schedule["active"] is False

    stack.api.patch(f"/deployments/{deployment['id']}/schedules/{schedule['id']}", {"active": True})
    try:
        def two_started() -> list[dict[str, Any]]:
            runs = [run for run in stack.api.flow_runs(deployment["id"]) if run["auto_scheduled"]]
            broken = [run for run in runs if run["state_type"] in {"FAILED", "CRASHED"}]
            assert not broken, f"{broken[0]['state']}\n{stack.worker_log()[-3000:]}"
            started = [run for run in runs if run["state_type"] in {"RUNNING", "COMPLETED"}]
            return started if len(started) >= 2 else []

        # One run at a time (concurrency_limit 1), so the second starts only after the first has finished.
        started = wait_for("two scheduled smoke runs to start", two_started, timeout=180)
    finally:
        stack.api.patch(f"/deployments/{deployment['id']}/schedules/{schedule['id']}", {"active": False})
        # Runs already waiting for the deployment's concurrency slot survive the switch-off; drop them so
        # they do not compete with the other tests for the worker and the CPU.
        for run in stack.api.flow_runs(deployment["id"]):
            if run["state_type"] == "SCHEDULED":
                stack.api.delete(f"/flow_runs/{run['id']}")
    first, second = (stack.api.wait_terminal(run["id"]) for run in started[:2])
    for run in (first, second):
        assert run["state_type"] == "COMPLETED", f"{run['state']}\n{stack.worker_log()[-3000:]}"

    stored = store_rows(
        stack,
        "SELECT r.run_id, count(s.score) AS n_scored FROM runs r JOIN scores s USING (run_id) "
        "WHERE r.name = 'smoke' AND r.status = 'completed' GROUP BY r.run_id, r.started_at ORDER BY r.started_at",
        [],
    )
    assert len(stored) >= 2 and all(row["n_scored"] > 0 for row in stored)
    keys = {artifact["key"] for artifact in stack.api.artifacts(second["id"])}
    assert "evalduck-smoke-regression" in keys
    (eval_run,) = stack.api.subflow_runs(second["id"])
    eval_keys = {artifact["key"] for artifact in stack.api.artifacts(eval_run["id"])}
    assert {"evalduck-smoke-summary", "evalduck-smoke-comparison"} <= eval_keys


def test_regression_check_fails_the_flow_run(stack: Stack, tmp_path: Path) -> None:
    """In this process, against the e2e server: the scheduled runs above already prove the worker path."""
    reference = [
        {"id": f"q{i}", "input": f"What is item {i}?", "groundTruth": f"Item {i} is a small blue box.",
         "output": f"Item {i} is a small blue box."}
        for i in range(6)
    ]
    worse = [{**row, "output": "I cannot help with that request today."} for row in reference]

    def check(dataset: Path) -> State:
        config = EvalConfig(
            dataset=str(dataset), scorers=[ScorerSpec(id="textual-difference-scorer")], name="e2e-regression",
            db=str(tmp_path / "regression.duckdb"), cache_dir=str(tmp_path / "cache"),
        )
        with temporary_settings({PREFECT_API_URL: stack.state.api_url, PREFECT_API_AUTH_STRING: stack.auth}):
            state: State = regression_check(config, return_state=True)
        return state

    baseline = check(jsonl(tmp_path / "reference.jsonl", reference))
    assert baseline.is_completed(), baseline.message
    regressed = check(jsonl(tmp_path / "worse.jsonl", worse))

    assert regressed.is_failed()
    assert "textual-difference-scorer regressed" in str(regressed.message)
    flow_run = stack.api.get(f"/flow_runs/{regressed.state_details.flow_run_id}")
    assert flow_run["state_type"] == "FAILED"
    (artifact,) = [a for a in stack.api.artifacts(flow_run["id"]) if a["key"] == "evalduck-e2e-regression-regression"]
    assert "**REGRESSION** in textual-difference-scorer" in artifact["data"]
