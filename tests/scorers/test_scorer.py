"""Scorer: create_scorer, run/arun (keywords or a Mastra dict), context_for and assemble."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from evalduck.scorers import (
    ConfigError,
    JudgePrompt,
    ScorerResult,
    StepContext,
    StepOutput,
    create_answer_relevancy_scorer,
    create_scorer,
    create_tone_scorer,
)
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

MASTRA_KEYS = {
    "runId", "score", "reason", "preprocessPrompt", "preprocessStepResult", "analyzePrompt", "analyzeStepResult",
    "generateScorePrompt", "generateReasonPrompt", "input", "output", "groundTruth",
}


def length_scorer(**kwargs: Any) -> Any:
    async def analyze(ctx: StepContext) -> dict[str, int]:
        return {"words": len(ctx.run.output.split())}

    return create_scorer(
        "length",
        analyze=analyze,
        generate_score=lambda ctx: min(1.0, ctx.results["analyze"]["words"] / 10),
        generate_reason=lambda ctx: f"{ctx.results['analyze']['words']} words give {ctx.score}",
        **kwargs,
    )


class TestRun:
    def test_keywords_and_mastra_dict_agree(self) -> None:
        scorer = length_scorer()
        by_kw = scorer.run(input="q", output="one two three", ground_truth="g", run_id="r-1")
        by_dict = scorer.run({"input": "q", "output": "one two three", "groundTruth": "g", "runId": "r-1"})
        assert by_kw == by_dict
        assert by_kw.score == 0.3 and by_kw.reason == "3 words give 0.3"
        assert by_kw.run_id == "r-1" and by_kw.scorer_id == "length" and by_kw.scorer_version == "1"

    def test_result_shapes(self) -> None:
        result = length_scorer().run(input="q", output="a b", ground_truth="g")
        camel = result.model_dump(by_alias=True)
        assert MASTRA_KEYS <= camel.keys()
        assert camel["analyzeStepResult"] == {"words": 2} and camel["groundTruth"] == "g"
        assert result.analyze_step_result == {"words": 2} and result.preprocess_step_result is None
        assert ScorerResult.model_validate(json.loads(json.dumps(camel))) == result

    def test_arun(self) -> None:
        assert asyncio.run(length_scorer().arun(input="q", output="a")).score == 0.1

    def test_run_inside_a_running_loop(self) -> None:
        async def notebook_cell() -> float:
            return length_scorer().run(input="q", output="a b c d").score

        assert asyncio.run(notebook_cell()) == 0.4

    def test_steps_in_pipeline_order(self) -> None:
        scorer = length_scorer()
        assert [s.name for s in scorer.steps] == ["analyze", "generate_score", "generate_reason"]
        assert scorer.step("analyze").label == "length.analyze"
        with pytest.raises(KeyError, match="no step 'preprocess'"):
            scorer.step("preprocess")


class TestCreateScorer:
    @pytest.mark.parametrize("bad_id", ["", "Has Caps", "sp ace", None])
    def test_bad_id(self, bad_id: Any) -> None:
        with pytest.raises(ConfigError, match="`id`"):
            create_scorer(bad_id, generate_score=lambda ctx: 1.0)

    def test_options_must_be_json(self) -> None:
        with pytest.raises(ConfigError, match="`options` must be JSON-serialisable"):
            create_scorer("x", generate_score=lambda ctx: 1.0, options={"f": object()})

    def test_options_key_function_steps_unless_step_params_say_otherwise(self) -> None:
        ctx_args = ("generate_score", {"input": "q", "output": "a"}, {"analyze": {"words": 1}})
        a, b = length_scorer(options={"w": 1}), length_scorer(options={"w": 2})
        assert a.step("generate_score").cache_key(a.context_for(*ctx_args)) != b.step("generate_score").cache_key(b.context_for(*ctx_args))
        c = length_scorer(options={"w": 2}, step_params={"generate_score": {}})
        d = length_scorer(options={"w": 3}, step_params={"generate_score": {}})
        assert c.step("generate_score").cache_key(c.context_for(*ctx_args)) == d.step("generate_score").cache_key(d.context_for(*ctx_args))

    def test_judge_prompt_needs_a_model(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("EVALDUCK_JUDGE_MODEL", raising=False)
        with pytest.raises(ConfigError, match="EVALDUCK_JUDGE_MODEL"):
            create_scorer("x", generate_score=lambda ctx: 1.0, generate_reason=JudgePrompt(prompt=lambda ctx: "why?"))

    def test_custom_judge_scorer(self, server: FakeOpenAIServer) -> None:
        scorer = create_scorer(
            "polite",
            instructions="You judge politeness.",
            judge={"model": "openai/fake-judge", "api_base": server.base_url, "extra": {"api_key": "sk-fake-12345678"}},
            generate_score=lambda ctx: 1.0 if "please" in ctx.run.output.lower() else 0.0,
            generate_reason=JudgePrompt(prompt=lambda ctx: f"<score>{ctx.score}</score> Why?"),
        )
        server.script("Because it says please.")
        result = scorer.run(input="q", output="Please wait.")
        assert (result.score, result.reason) == (1.0, "Because it says please.")
        assert result.generate_reason_prompt == "<score>1.0</score> Why?"
        assert server.requests[0]["messages"][0] == {"role": "system", "content": "You judge politeness."}


class TestContextAndAssemble:
    def test_context_for_filters_later_results_and_score(self) -> None:
        scorer = length_scorer()
        results = {"analyze": {"words": 1}, "generate_score": 0.1, "generate_reason": "x"}
        ctx = scorer.context_for("generate_score", {"input": "q", "output": "a"}, results, score=0.1)
        assert ctx.results == {"analyze": {"words": 1}} and ctx.score is None
        reason_ctx = scorer.context_for("generate_reason", {"input": "q", "output": "a"}, results, score=0.1)
        assert reason_ctx.score == 0.1 and "generate_reason" not in reason_ctx.results

    def test_assemble_equals_arun_for_code_scorer(self) -> None:
        scorer = create_tone_scorer()
        run = {"input": "Thanks, great help!", "output": "Happy to help, have a great day!", "runId": "r"}
        outputs: dict[str, StepOutput] = {}
        for step in scorer.steps:
            ctx = scorer.context_for(step.name, run, {k: v.result for k, v in outputs.items()})
            outputs[step.name] = asyncio.run(step.arun(ctx))
        assert scorer.assemble(run, outputs) == scorer.run(run)

    def test_assemble_equals_arun_for_judge_scorer(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        scorer = create_answer_relevancy_scorer(**judge)
        run = {"input": "How do I pay?", "output": "By card. Or by bank transfer."}
        outputs: dict[str, StepOutput] = {}
        score = None
        for step in scorer.steps:  # as an orchestrator would, one step at a time
            ctx = scorer.context_for(step.name, run, {k: v.result for k, v in outputs.items()}, score)
            outputs[step.name] = asyncio.run(step.arun(ctx))
            if step.name == "generate_score":
                score = outputs[step.name].result
        assembled = scorer.assemble(run, outputs)
        direct = scorer.run(run)
        strip = {"usage"}  # latencies differ between the two runs
        assert assembled.model_dump(exclude=strip) == direct.model_dump(exclude=strip)
        assert len(assembled.usage) == len(direct.usage) == 3

    def test_assemble_requires_every_step(self) -> None:
        with pytest.raises(ValueError, match="no output for step"):
            length_scorer().assemble({"output": "a"}, {"analyze": StepOutput(result={"words": 1})})
