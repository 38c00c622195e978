"""The three cache consequences, proven with the fake servers' request counters."""

from __future__ import annotations

from typing import Any

import pytest
from flow_helpers import judge_scorer, rows

from evalduck.flows import run_evals
from evalduck.flows.store import Store
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, request_step

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _steps(server: FakeOpenAIServer) -> dict[str, int]:
    counts: dict[str, int] = {}
    for req in server.requests:
        counts[request_step(req)] = counts.get(request_step(req), 0) + 1
    return counts


def test_unchanged_rerun_weight_change_and_refresh(judge: FakeOpenAIServer, workdir: dict[str, str]) -> None:
    # "unsure" verdicts for the museum sentence, so the score depends on uncertainty_weight.
    judge.responder = _verdicts_with_unsure(judge)
    items = [{k: v for k, v in r.items() if k != "output"} for r in rows(4)]
    answer = "The capital is the biggest city. It has a famous museum."
    with FakeOpenAIServer(responder=lambda req: answer) as target:
        model = "model:openai/fake-target"

        def run(**kw: Any) -> Any:
            completed: list[str] = []
            result = run_evals(
                items, scorers=[judge_scorer(judge, **kw.pop("options", {}))], target=model,
                target_api_base=target.base_url, on_item_complete=lambda r: completed.append(r.item_id),
                concurrency=4, **workdir, **kw,
            )
            assert sorted(completed) == sorted(r["id"] for r in items)  # once per item
            return result

        first = run()
        assert target.request_count == 4
        assert _steps(judge) == {"preprocess": 4, "analyze": 4, "generate_reason": 4}
        assert first.summary["scorers"]["answer-relevancy-scorer"]["scored"] == 4

        target.reset(), judge.reset()
        second = run()
        assert target.request_count == 0 and judge.request_count == 0
        assert second.scores == first.scores

        target.reset(), judge.reset()
        third = run(options={"uncertainty_weight": 0.9})
        assert target.request_count == 0
        steps = _steps(judge)
        assert "preprocess" not in steps and "analyze" not in steps
        assert steps.get("generate_reason") == 4  # new score, so a new reason; score itself is a code step
        assert third.scores["answer-relevancy-scorer"] > first.scores["answer-relevancy-scorer"]

        target.reset(), judge.reset()
        run(options={"uncertainty_weight": 0.9}, refresh=True)
        assert target.request_count == 4
        assert _steps(judge) == {"preprocess": 4, "analyze": 4, "generate_reason": 4}

    outputs = Store(workdir["db"]).sql("SELECT DISTINCT output FROM items WHERE output IS NOT NULL").rows
    assert outputs, "the target's outputs are stored with the items"


def _verdicts_with_unsure(server: FakeOpenAIServer) -> Any:
    from evalduck.scorers.testing.fake_openai import default_responder

    return lambda req: default_responder(req, lambda s: "unsure" if "museum" in s else "yes")


def test_target_output_is_what_gets_scored(judge: FakeOpenAIServer, workdir: dict[str, str]) -> None:
    calls: list[str] = []

    async def echo_target(question: str) -> str:
        calls.append(question)
        return question  # identical to the input: textual difference against the input is 1.0

    items = [{"id": f"t-{i}", "input": f"Question {i}?"} for i in range(3)]
    result = run_evals(items, scorers=["textual-difference-scorer"], target=echo_target, **workdir)
    assert len(calls) == 3
    assert result.scores["textual-difference-scorer"] == 1.0
    run_evals(items, scorers=["textual-difference-scorer"], target=echo_target, **workdir)
    assert len(calls) == 3  # the target call is cached like a judge step
