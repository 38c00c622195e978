"""What the Prefect UI shows of a judge run: every scorer step as task runs, the code step included."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid

import pytest
from flow_helpers import judge_scorer, rows
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

from evalduck.flows import run_evals
from evalduck.flows.store import Store
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, Reply

pytestmark = pytest.mark.usefixtures("prefect_harness")

STEPS = ("preprocess", "analyze", "generate_score", "generate_reason")


async def _task_run_names(flow_run_id: str, judge_runs: int) -> list[str]:
    """The flow run's task run names, once the server has recorded every judge step's and a code step's
    (task runs reach it as events, possibly after the flow has returned)."""
    only_this_run = FlowRunFilter(id=FlowRunFilterId(any_=[uuid.UUID(flow_run_id)]))
    async with get_client() as client:
        for _ in range(100):
            names = [r.name for r in await client.read_task_runs(flow_run_filter=only_this_run)]
            code = sum(".generate_score[" in n for n in names)
            if code and len(names) - code >= judge_runs:
                await asyncio.sleep(0.5)  # a later micro-batch may still be on its way
                return [r.name for r in await client.read_task_runs(flow_run_filter=only_this_run)]
            await asyncio.sleep(0.2)
    return names


def test_every_step_of_a_judge_scorer_is_a_task_run(judge: FakeOpenAIServer, workdir: dict[str, str]) -> None:
    result = run_evals(rows(4), scorers=[judge_scorer(judge)], concurrency=4, **workdir)
    assert result.summary["scorers"]["answer-relevancy-scorer"]["scored"] == 4
    flow_run_id = Store(workdir["db"]).sql(f"SELECT flow_run_id FROM runs WHERE run_id = '{result.run_id}'").rows[0][0]
    names = asyncio.run(_task_run_names(flow_run_id, judge_runs=3 * 4))
    per_step = {step: [n for n in names if n.startswith(f"answer-relevancy-scorer.{step}[")] for step in STEPS}
    for step in ("preprocess", "analyze", "generate_reason"):  # judge steps: one task run per item
        assert len(per_step[step]) == 4, (step, names)
    # The code step: micro-batches over items (one task run per batch, never more than one per item).
    assert 1 <= len(per_step["generate_score"]) <= 4, names
    span = r"row \d+|\d+ items: row \d+ \.\. row \d+"
    assert all(re.fullmatch(rf"answer-relevancy-scorer\.generate_score\[({span})\]", n) for n in per_step["generate_score"])


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_retries_reach_the_task_run_logs_but_routine_lines_do_not(
    judge: FakeOpenAIServer, workdir: dict[str, str]
) -> None:
    judge.script(Reply.server_error(500))
    collected = _Collect()
    task_runs = logging.getLogger("prefect.task_runs")  # what the console and the API handlers receive
    task_runs.addHandler(collected)
    filters_before = list(task_runs.filters)
    try:
        result = run_evals(rows(2), scorers=[judge_scorer(judge)], retry_backoff_s=0.05, **workdir)
        again = run_evals(rows(2), scorers=[judge_scorer(judge)], **workdir)  # every judge step cached
    finally:
        task_runs.removeHandler(collected)
    assert result.summary["scorers"]["answer-relevancy-scorer"]["scored"] == 2
    assert again.summary["scorers"]["answer-relevancy-scorer"]["scored"] == 2
    assert any("Retry 1/3" in m for m in collected.messages), collected.messages  # the retry is told
    assert not [m for m in collected.messages if m.startswith(("Created task run", "Finished in state"))]
    assert task_runs.filters == filters_before  # the filter lives for the run only
