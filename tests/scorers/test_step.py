"""Steps run on their own: function steps (sync or async), judge steps, and the result checks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from evalduck.scorers import (
    ConfigError,
    JudgePrompt,
    JudgeSettings,
    ScorerInput,
    Step,
    StepContext,
    StepResultError,
)
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

CTX = StepContext(run=ScorerInput(input="q", output="an answer"))


def run(step: Step, ctx: StepContext = CTX) -> Any:
    return asyncio.run(step.arun(ctx))


def fn_step(name: str, fn: Any) -> Step:
    return Step(name=name, scorer_id="demo", scorer_version="1", fn=fn)


def test_sync_and_async_functions() -> None:
    async def async_len(ctx: StepContext) -> dict[str, int]:
        await asyncio.sleep(0)
        return {"n": len(ctx.run.output)}

    assert run(fn_step("analyze", lambda ctx: {"n": len(ctx.run.output)})).result == {"n": 9}
    out = run(fn_step("analyze", async_len))
    assert out.result == {"n": 9} and out.prompt is None and out.usage == []
    assert not fn_step("analyze", async_len).is_judge


def test_non_json_result_names_scorer_and_step() -> None:
    with pytest.raises(StepResultError, match=r"demo\.analyze returned a result that is not JSON-serialisable"):
        run(fn_step("analyze", lambda ctx: {"when": object()}))
    with pytest.raises(StepResultError, match="demo.analyze"):
        run(fn_step("analyze", lambda ctx: {"x": float("nan")}))


@pytest.mark.parametrize("bad", ["0.5", None, True, float("inf")])
def test_generate_score_must_be_a_finite_number(bad: Any) -> None:
    with pytest.raises(StepResultError, match=r"demo\.generate_score (must return a finite number|returned a result that is not JSON)"):
        run(fn_step("generate_score", lambda ctx: bad))


def test_generate_reason_must_be_text() -> None:
    with pytest.raises(StepResultError, match="must return a string"):
        run(fn_step("generate_reason", lambda ctx: {"reason": "x"}))


class Labels(BaseModel):
    labels: list[str]


def test_construction_errors() -> None:
    judge = JudgeSettings(model="openai/x")
    with pytest.raises(ConfigError, match="`step name` must be one of"):
        fn_step("postprocess", lambda ctx: 1)
    with pytest.raises(ConfigError, match="exactly one"):
        Step(name="analyze", scorer_id="d", scorer_version="1")
    with pytest.raises(ConfigError, match="generate_score must be a function"):
        Step(name="generate_score", scorer_id="d", scorer_version="1", judge=judge, judge_prompt=JudgePrompt(prompt=str))
    with pytest.raises(ConfigError, match="needs an `output_model`"):
        Step(name="analyze", scorer_id="d", scorer_version="1", judge=judge, judge_prompt=JudgePrompt(prompt=str))
    with pytest.raises(ConfigError, match="needs judge settings"):
        Step(name="analyze", scorer_id="d", scorer_version="1", judge_prompt=JudgePrompt(prompt=str, output_model=Labels))


def test_judge_step_runs_on_its_own(server: FakeOpenAIServer) -> None:
    step = Step(
        name="analyze",
        scorer_id="labeller",
        scorer_version="1",
        instructions="You label texts.",
        judge=JudgeSettings(model="openai/fake-judge", api_base=server.base_url, extra={"api_key": "sk-fake-12345678"}),
        judge_prompt=JudgePrompt(prompt=lambda ctx: f"Label: {ctx.run.output}", output_model=Labels),
    )
    server.script({"labels": ["greeting"]})
    out = run(step)
    assert step.is_judge and out.result == {"labels": ["greeting"]} and out.prompt == "Label: an answer"
    sent = server.requests[0]
    assert sent["messages"] == [
        {"role": "system", "content": "You label texts."},
        {"role": "user", "content": "Label: an answer"},
    ]
    assert sent["response_format"]["json_schema"]["name"] == "Labels"
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["labels"]
    assert len(out.usage) == 1
