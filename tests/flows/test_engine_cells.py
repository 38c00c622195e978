"""A cell's row from its pipeline: what the engine stores when a step fails where."""

from __future__ import annotations

import pytest
from flow_helpers import rows
from pydantic import BaseModel

from evalduck.flows import run_evals
from evalduck.flows.store import Store
from evalduck.scorers import JudgePrompt, NotScorable, StepContext, create_scorer
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer


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


class _Passages(BaseModel):
    passages: int


def _needs_context(ctx: StepContext) -> dict[str, int]:
    if ctx.run.context is None:
        raise NotScorable("needs-context needs `context`: give each row its retrieved passages")
    return {"passages": len(ctx.run.context)}


def _needs_tool(ctx: StepContext) -> dict[str, str]:
    if ctx.run.expected_tool is None:
        raise NotScorable("needs-tool needs `expectedTool` in the row")
    return {"tool": ctx.run.expected_tool}


@pytest.mark.usefixtures("prefect_harness")
def test_not_scorable_cells_are_skipped_with_their_reason(judge: FakeOpenAIServer, workdir: dict[str, str]) -> None:
    """A judge step (its own task) and a code step (a chunk) raising NotScorable: `skipped`, the message as
    `reason`, no error, out of the means, counted apart; the run fields reached the steps."""
    ask = JudgePrompt(prompt=lambda ctx: "unused", output_model=_Passages, shortcut=_needs_context)
    judged = create_scorer("needs-context", preprocess=ask, generate_score=lambda ctx: ctx.results["preprocess"]["passages"],
                           judge={"model": "openai/fake-judge", "api_base": judge.base_url})
    coded = create_scorer("needs-tool", preprocess=_needs_tool, generate_score=lambda ctx: 1.0)
    data = [{**r, "context": ["a", "b"], "expectedTool": "search"} if r["id"] == "q-0" else r for r in rows(3)]
    result = run_evals(data, scorers=[judged, coded], **workdir)
    cells = {r[:2]: r[2:] for r in Store(workdir["db"]).sql(
        "SELECT scorer_id, item_id, status, score, reason, error FROM scores WHERE run_id = ?", [result.run_id]).rows}
    assert cells[("needs-context", "q-0")] == ("scored", 2.0, None, None)
    assert cells[("needs-tool", "q-0")] == ("scored", 1.0, None, None)
    assert cells[("needs-context", "q-1")] == ("skipped", None, "needs-context needs `context`: give each row its "
                                               "retrieved passages", None)
    assert cells[("needs-tool", "q-2")] == ("skipped", None, "needs-tool needs `expectedTool` in the row", None)
    for scorer in ("needs-context", "needs-tool"):
        counts = result.summary["scorers"][scorer]
        assert (counts["scored"], counts["errored"], counts["skipped"]) == (1, 0, 2)
    assert result.scores == {"needs-context": 2.0, "needs-tool": 1.0} and judge.request_count == 0
    stored = Store(workdir["db"]).sql("SELECT context, expected_tool FROM items WHERE item_id = 'q-0'").rows
    assert stored == [('["a", "b"]', "search")]
