"""Answer relevancy through litellm and the fake OpenAI server (SPEC 3.1)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalduck.scorers import (
    ConfigError,
    InvalidJudgeAnswer,
    ScorerInputError,
    ScorerResult,
    create_answer_relevancy_scorer,
)
from evalduck.scorers.prebuilt.answer_relevancy import relevancy_score
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, Reply

QUESTION = "How do I reset my password?"


def verdicts(*results: str) -> dict[str, Any]:
    return {"results": [{"result": r, "reason": f"because {r}"} for r in results]}


def scripted_run(server: FakeOpenAIServer, judge: dict[str, Any], statements: list[str], results: list[str], **options: Any) -> ScorerResult:
    server.script({"statements": statements}, verdicts(*results))
    return create_answer_relevancy_scorer(**judge, **options).run(input=QUESTION, output=" ".join(statements))


class TestScores:
    def test_all_yes_is_one(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        result = scripted_run(server, judge, ["Open Settings.", "Click Reset."], ["yes", "yes"])
        assert result.score == 1.0
        assert server.request_count == 3  # preprocess, analyze, generate_reason
        assert result.reason and "1.0" in result.reason
        assert ScorerResult.model_validate_json(result.model_dump_json(by_alias=True)) == result

    def test_one_unsure_of_one(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        assert scripted_run(server, judge, ["Maybe check settings."], ["unsure"]).score == 0.3

    def test_yes_unsure_no(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        assert scripted_run(server, judge, ["a.", "b.", "c."], ["yes", "unsure", "no"]).score == 0.43

    def test_one_unsure_of_four_rounds_half_up(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        assert scripted_run(server, judge, ["a.", "b.", "c.", "d."], ["no", "unsure", "no", "no"]).score == 0.08

    def test_custom_weight_and_scale(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        result = scripted_run(server, judge, ["a.", "b."], ["yes", "unsure"], uncertainty_weight=0.5, scale=10)
        assert result.score == 7.5  # (1 + 0.5) / 2 * 10

    def test_verdicts_compared_trimmed_and_case_insensitively(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        assert scripted_run(server, judge, ["a.", "b."], [" YES ", "Unsure"]).score == 0.65

    def test_empty_output_makes_no_request(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        result = create_answer_relevancy_scorer(**judge).run(input=QUESTION, output="   ")
        assert result.score == 0.0
        assert result.preprocess_step_result == {"statements": []}
        assert result.analyze_step_result == {"results": []}
        assert result.reason and result.preprocess_prompt is None
        assert server.request_count == 0

    def test_chat_messages(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        chat_in = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
        chat_out = [{"role": "assistant", "content": "Use the reset link."}]
        result = create_answer_relevancy_scorer(**judge).run(input=chat_in, output=chat_out)
        assert result.preprocess_step_result == {"statements": ["Use the reset link."]}
        prompt = server.requests[0]["messages"][1]["content"]
        assert f"<question>\n{QUESTION}\n</question>" in prompt and "Be brief." not in prompt


class TestWhatTheJudgeIsSent:
    def test_messages_and_response_format(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        result = create_answer_relevancy_scorer(**judge, temperature=0.2).run(input=QUESTION, output="Click Forgot password. Then check mail.")
        pre, ana, reason = server.requests
        for body in server.requests:
            assert body["model"] == "fake-judge"
            assert body["temperature"] == 0.2
            system, user = body["messages"]
            assert system["role"] == "system" and "relevance" in system["content"]
            assert user["role"] == "user"
        assert pre["response_format"]["type"] == "json_schema"
        assert list(pre["response_format"]["json_schema"]["schema"]["properties"]) == ["statements"]
        assert list(ana["response_format"]["json_schema"]["schema"]["properties"]) == ["results"]
        assert "response_format" not in reason
        assert pre["messages"][1]["content"] == result.preprocess_prompt
        assert ana["messages"][1]["content"] == result.analyze_prompt
        assert reason["messages"][1]["content"] == result.generate_reason_prompt
        assert "Click Forgot password." in result.analyze_prompt and "exactly 2 verdict(s)" in result.analyze_prompt
        assert "<score>\n1.0\n</score>" in result.generate_reason_prompt

    def test_usage_is_recorded_per_request(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        result = create_answer_relevancy_scorer(**judge).run(input=QUESTION, output="Use the link.")
        assert len(result.usage) == 3
        for usage in result.usage:
            assert usage.model == "openai/fake-judge"
            assert usage.prompt_tokens and usage.prompt_tokens > 0 and usage.completion_tokens
            assert usage.cost is None  # litellm has no price for the fake model
            assert usage.latency_s >= 0 and not usage.repair


class TestInvalidAnswers:
    def _analyze(self, judge: dict[str, Any]) -> tuple[Any, Any]:
        scorer = create_answer_relevancy_scorer(**judge, retries=0)
        ctx = scorer.context_for("analyze", {"input": QUESTION, "output": "a. b."}, {"preprocess": {"statements": ["a.", "b."]}})
        return scorer.step("analyze"), ctx

    def test_wrong_count_triggers_one_repair_with_the_error(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        step, ctx = self._analyze(judge)
        server.script(Reply.wrong_verdict_count(), verdicts("yes", "no"))
        out = asyncio.run(step.arun(ctx))
        assert out.result == verdicts("yes", "no")
        assert server.request_count == 2
        repair = server.requests[1]["messages"]
        assert repair[2]["role"] == "assistant"
        assert "expected 2 verdict(s), one per statement, got 3" in repair[3]["content"]
        assert [u.repair for u in out.usage] == [False, True]

    def test_second_bad_answer_raises(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        step, ctx = self._analyze(judge)
        server.script(Reply.wrong_verdict_count(), Reply.wrong_verdict_count(delta=-1))
        with pytest.raises(InvalidJudgeAnswer) as info:
            asyncio.run(step.arun(ctx))
        message = str(info.value)
        assert "answer-relevancy-scorer.analyze" in message and "openai/fake-judge" in message
        assert "got 1" in message
        assert server.request_count == 2

    def test_malformed_json_and_unknown_verdict_are_repaired(self, server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
        server.script(Reply.malformed_json(), {"statements": ["a."]}, verdicts("maybe"), verdicts("no"))
        result = create_answer_relevancy_scorer(**judge, retries=0).run(input=QUESTION, output="a.")
        assert result.score == 0.0
        assert "not valid JSON" in server.requests[1]["messages"][-1]["content"]
        assert "must be one of yes, unsure, no, got 'maybe'" in server.requests[3]["messages"][-1]["content"]

    def test_standalone_run_retries_an_invalid_answer(self, server: FakeOpenAIServer, judge: dict[str, Any], sleeps: list[float]) -> None:
        server.script({"statements": ["a."]}, Reply.wrong_verdict_count(), Reply.wrong_verdict_count())
        result = create_answer_relevancy_scorer(**judge, retries=1).run(input=QUESTION, output="a.")
        assert result.score == 1.0 and len(sleeps) == 1


class TestOptions:
    def test_partial_options_merge_and_camel_case(self, judge: dict[str, Any]) -> None:
        scorer = create_answer_relevancy_scorer({"uncertaintyWeight": 0.5}, **judge)
        assert scorer.options["uncertainty_weight"] == 0.5 and scorer.options["scale"] == 1.0
        assert scorer.options["retries"] == 3 and scorer.options["model"] == "openai/fake-judge"

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ({"uncertainty_weight": 1.5}, "`uncertainty_weight` must be between 0 and 1, got 1.5"),
            ({"uncertainty_weight": -0.1}, "`uncertainty_weight` must be between 0 and 1, got -0.1"),
            ({"scale": 0}, "`scale` must be a finite number greater than 0, got 0"),
            ({"temperature": 5}, "`temperature`"),
            ({"retries": -1}, "`retries`"),
            ({"colour": "red"}, "unknown option `colour`"),
        ],
    )
    def test_invalid_options_fail_at_creation(self, options: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError) as info:
            create_answer_relevancy_scorer(model="openai/x", **options)
        assert isinstance(info.value, ConfigError) and message in str(info.value)

    def test_no_model_names_the_variable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("EVALDUCK_JUDGE_MODEL", raising=False)
        with pytest.raises(ConfigError, match="EVALDUCK_JUDGE_MODEL"):
            create_answer_relevancy_scorer()

    def test_model_from_environment_at_creation(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("EVALDUCK_JUDGE_MODEL", "openai/from-env")
        scorer = create_answer_relevancy_scorer()
        monkeypatch.setenv("EVALDUCK_JUDGE_MODEL", "openai/changed-later")
        assert scorer.judge is not None and scorer.judge.model == "openai/from-env"

    def test_needs_input(self, judge: dict[str, Any]) -> None:
        with pytest.raises(ScorerInputError, match="needs `input`"):
            create_answer_relevancy_scorer(**judge).run(output="An answer.")


@given(
    results=st.lists(st.sampled_from(["yes", "unsure", "no", " Yes", "NO "]), max_size=30),
    weight=st.floats(min_value=0, max_value=1),
    scale=st.floats(min_value=0.001, max_value=1000),
)
def test_formula_in_range(results: list[str], weight: float, scale: float) -> None:
    score = relevancy_score(results, weight, scale)
    assert 0 <= score <= scale
    if results and all(r.strip().lower() == "yes" for r in results):
        assert score == pytest.approx(scale, abs=0.005)
