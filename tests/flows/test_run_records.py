"""What a run records: a resume only with the rows it was made from, and no credentials from URLs in the
results file or in Prefect's flow-run parameters (while the flow itself gets the real URL)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from flow_helpers import rows
from prefect.client.orchestration import get_client

from evalduck.flows import run_eval_config, run_evals
from evalduck.flows.config import EvalConfig
from evalduck.flows.run.redacting_flow import redacting_flow
from evalduck.flows.store import DatasetMismatchError, Store

pytestmark = pytest.mark.usefixtures("prefect_harness")

SECRET = "probe5CANARYurl9d8e7f6a5b"
URL = f"http://user:{SECRET}@127.0.0.1:9/v1"


def _parameters(flow_run_id: str) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        async with get_client() as client:
            return (await client.read_flow_run(UUID(flow_run_id))).parameters

    return asyncio.run(read())


def test_resume_with_other_rows_is_refused_and_adds_nothing(workdir: dict[str, str]) -> None:
    first = run_evals(rows(2), scorers=["tone-scorer"], name="two", **workdir)
    with pytest.raises(DatasetMismatchError, match=rf"run {first.run_id} \(two\) was made from <memory>"):
        run_evals(rows(3), scorers=["tone-scorer"], resume=first.run_id, **workdir)
    store = Store(workdir["db"])
    assert store.sql("SELECT count(*) FROM items").rows == [(2,)]
    assert store.run_record(first.run_id).status == "completed"
    again = run_evals(rows(2), scorers=["tone-scorer"], resume="two", **workdir)  # the same rows resume
    assert again.run_id == first.run_id


def test_a_key_in_the_judge_url_is_masked_in_the_results_file_and_the_flow_run(
    workdir: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows(2)))
    config = EvalConfig(dataset=str(data), scorers=["tone-scorer"], judge_api_base=URL, name="masked", **workdir)
    result = run_eval_config(config)
    (stored,) = Store(workdir["db"]).sql("SELECT config FROM runs").rows[0]
    parameters = _parameters(result.flow_run_id or "")
    assert SECRET not in stored and SECRET not in json.dumps(parameters)
    masked = "http://user:***@127.0.0.1:9/v1"
    assert json.loads(stored)["judge_api_base"] == masked
    assert parameters["config"]["judge_api_base"] == masked


@redacting_flow(name="echo-url", persist_result=False)
def echo(url: str) -> str:
    return url


def test_the_flow_itself_gets_the_real_url() -> None:
    state = echo(URL, return_state=True)
    assert state.result() == URL
    assert _parameters(str(state.state_details.flow_run_id))["url"] == "http://user:***@127.0.0.1:9/v1"


def test_a_run_is_compared_with_the_last_completed_run_of_its_name(workdir: dict[str, str]) -> None:
    from evalduck.flows.engine import FailFast
    from evalduck.scorers import create_scorer

    first = run_evals(rows(2), scorers=["tone-scorer"], name="nightly", **workdir)
    broken = create_scorer("tone-scorer", generate_score=lambda ctx: 1 / 0)
    with pytest.raises(FailFast):
        run_evals(rows(2), scorers=[broken], name="nightly", fail_fast=True, **workdir)
    third = run_evals(rows(2), scorers=["tone-scorer"], name="nightly", **workdir)
    assert third.previous_run_id == first.run_id  # not the failed run in between, which holds part of its cells


def test_a_runs_report_and_artifacts_read_the_file_through_one_opening(
    workdir: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's end (summary, comparison, trend chart, HTML report: a dozen reads in two threads) opens the
    DuckDB file once (Store.held), not once per read: each open costs ~25 ms of CPU, and the two threads'
    reads waited for each other's."""
    import duckdb

    import evalduck.flows.eval_flow as eval_flow

    real_connect, real_publish = duckdb.connect, eval_flow.publish_report
    ending: list[bool] = []
    opened: list[str] = []

    def counting(database: Any = ":memory:", *args: Any, **kwargs: Any) -> Any:
        if ending:
            opened.append(str(database))
        return real_connect(database, *args, **kwargs)

    async def publish(prepared: Any) -> Any:
        ending.append(True)
        try:
            return await real_publish(prepared)
        finally:
            ending.clear()

    run_evals(rows(3), scorers=["tone-scorer", "completeness-scorer"], name="end", **workdir)
    monkeypatch.setattr(duckdb, "connect", counting)
    monkeypatch.setattr(eval_flow, "publish_report", publish)
    second = run_evals(rows(3), scorers=["tone-scorer", "completeness-scorer"], name="end", **workdir)
    assert second.previous_run_id and second.comparison is not None and second.report
    assert opened == [workdir["db"]]
