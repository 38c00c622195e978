"""A cell's row from its pipeline: what the engine stores when a step fails where."""

from __future__ import annotations

import pytest

from flows import run_evals
from flows.store import Store
from scorers import StepContext, create_scorer

from flow_helpers import rows


def _reason(ctx: StepContext) -> str:
    if "1" in str(ctx.run.output):
        raise RuntimeError("the reason writer broke")
    return f"{ctx.score} because"


def _score(ctx: StepContext) -> float:
    if "2" in str(ctx.run.output):
        raise ValueError("no score today")
    return 0.5


@pytest.mark.usefixtures("prefect_harness")
def test_a_failed_reason_keeps_the_score_and_an_earlier_failure_is_the_error(workdir: dict[str, str]) -> None:
    scorer = create_scorer("flaky", generate_score=_score, generate_reason=_reason)
    result = run_evals(rows(3), scorers=[scorer], **workdir)
    cells = {r[0]: r[1:] for r in Store(workdir["db"]).sql(
        "SELECT item_id, status, score, reason, error FROM scores WHERE run_id = ?", [result.run_id]).rows}
    assert cells["q-0"] == ("scored", 0.5, "0.5 because", None)
    assert cells["q-1"][:3] == ("scored", 0.5, None)  # the score stands; the reason's failure is recorded
    assert cells["q-1"][3].startswith("flaky.generate_reason: RuntimeError: the reason writer broke")
    assert cells["q-2"][0] == "error" and cells["q-2"][1] is None
    assert cells["q-2"][3].startswith("flaky.generate_score: ValueError: no score today")
    assert result.summary["scorers"]["flaky"]["scored"] == 2
