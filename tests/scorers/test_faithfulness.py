"""Faithfulness and hallucination (SCORERS.md 1.1, 1.2): claims judged against the resolved context."""

from __future__ import annotations

from typing import Any

import pytest
from judged import JUDGE

from evalduck.scorers import (
    ConfigError,
    InvalidJudgeAnswer,
    NotScorable,
    create_faithfulness_scorer,
    create_hallucination_scorer,
)
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

CONTEXT = ["The Eiffel Tower is in Paris.", "The Eiffel Tower was completed in 1889."]
OUTPUT = "The Eiffel Tower was completed in 1889. The Eiffel Tower stands in Berlin. The Eiffel Tower may close soon."
TOOL_OUTPUT = [
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "search"}}]},
    {"role": "tool", "content": "The Eiffel Tower was completed in 1889.", "tool_call_id": "c1"},
    {"role": "assistant", "content": "The Eiffel Tower was completed in 1889."},
]


def verdicts(*values: str) -> dict[str, Any]:
    claims = [f"claim {i}" for i in range(len(values))]
    return {
        "preprocess": {"claims": claims},
        "analyze": {
            "verdicts": [{"statement": c, "verdict": v, "reason": "r"} for c, v in zip(claims, values, strict=True)]
        },
    }


@pytest.mark.parametrize(
    ("values", "scale", "expected"),
    [
        (["yes", "no", "unsure"], 1.0, 0.33),  # only yes counts
        (["yes", "yes", "unsure"], 1.0, 0.67),
        ([" Yes", "UNSURE"], 1.0, 0.5),
        (["yes"] + ["no"] * 7, 1.0, 0.13),
        (["yes", "no"], 3, 1.5),
        ([], 1.0, 0.0),  # no claims
    ],
)
def test_faithfulness_formula(values: list[str], scale: float, expected: float, step_result: Any) -> None:
    assert step_result(create_faithfulness_scorer(JUDGE, scale=scale), "generate_score", verdicts(*values), context=CONTEXT) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [(["yes", "no", "no"], 0.33), (["yes", "yes", "no", "no"], 0.5), (["no"], 0.0), (["YES "], 1.0), ([], 0.0),
     (["yes"] + ["no"] * 7, 0.13)],  # 0.125 rounds half up
)
def test_hallucination_formula(values: list[str], expected: float, step_result: Any) -> None:
    assert step_result(create_hallucination_scorer(JUDGE), "generate_score", verdicts(*values), context=CONTEXT) == expected


def test_faithfulness_against_the_fake_judge(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_faithfulness_scorer(fake_judge).run(input="Tell me about the tower.", output=OUTPUT, context=CONTEXT)
    assert len(result.preprocess_step_result["claims"]) == 3
    assert [v["verdict"] for v in result.analyze_step_result["verdicts"]] == ["yes", "no", "unsure"]
    assert result.score == 0.33 and fake.request_count == 3
    assert '"context_index": 1' in result.analyze_prompt and "1889" in result.analyze_prompt


def test_hallucination_against_the_fake_judge(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    scorer = create_hallucination_scorer(fake_judge, context=CONTEXT)  # the option, as the run gives none
    result = scorer.run(input="Tell me about the tower.", output=OUTPUT)
    assert [v["verdict"] for v in result.analyze_step_result["verdicts"]] == ["no", "yes", "yes"]
    assert result.analyze_step_result["verdicts"][1]["statement"] == "The Eiffel Tower stands in Berlin."
    assert result.score == 0.67 and scorer.higher_is_better is False and fake.request_count == 3


def test_the_runs_context_wins_over_the_option(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    scorer = create_faithfulness_scorer(fake_judge, context="Bananas are yellow.")
    result = scorer.run(output="The Eiffel Tower was completed in 1889.", context=CONTEXT)
    assert result.score == 1.0 and "Bananas" not in result.analyze_prompt


def test_faithfulness_falls_back_to_tool_results_and_hallucination_does_not(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_faithfulness_scorer(fake_judge).run(input="When?", output=TOOL_OUTPUT)
    assert result.score == 1.0 and "completed in 1889" in result.analyze_prompt
    fake.reset()
    with pytest.raises(NotScorable, match=r"hallucination-scorer needs a context") as info:
        create_hallucination_scorer(fake_judge).run(input="When?", output=TOOL_OUTPUT)
    assert "tool results" not in str(info.value)
    with pytest.raises(NotScorable, match=r"faithfulness-scorer needs a context.*tool results"):
        create_faithfulness_scorer(fake_judge).run(input="When?", output="It was 1889.")
    assert fake.request_count == 0  # NotScorable comes before any request


def test_empty_context_judges_every_claim_without_a_request(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    fake.script({"claims": ["A.", "B."]})
    faithful = create_faithfulness_scorer(fake_judge).run(output="A. B.", context=[])
    assert faithful.analyze_step_result == {"verdicts": [{"verdict": "unsure", "reason": "No context was given."}] * 2}
    assert faithful.score == 0.0 and "context is empty" in (faithful.reason or "")
    fake.script({"claims": ["A.", "B."]})
    invented = create_hallucination_scorer(fake_judge).run(output="A. B.", context=[])
    assert [v["verdict"] for v in invented.analyze_step_result["verdicts"]] == ["yes", "yes"]
    assert invented.analyze_step_result["verdicts"][0]["statement"] == "A." and invented.score == 1.0
    assert fake.request_count == 2  # the two preprocess requests only


@pytest.mark.parametrize("factory", [create_faithfulness_scorer, create_hallucination_scorer])
def test_blank_output_and_no_claims_make_no_request(factory: Any, fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = factory(fake_judge).run(output=" \n", context=CONTEXT)
    assert (result.preprocess_step_result, result.analyze_step_result, result.score) == ({"claims": []}, {"verdicts": []}, 0.0)
    assert result.reason == "The score is 0.0: the output makes no claims."
    assert fake.request_count == 0


def test_one_verdict_per_claim_and_known_verdicts(fake: FakeOpenAIServer, fake_judge: dict[str, Any], step_result: Any) -> None:
    scorer = create_faithfulness_scorer(fake_judge)
    fake.script({"verdicts": [{"verdict": "maybe", "reason": "r"}]}, {"verdicts": [{"verdict": "yes", "reason": "r"}] * 3})
    with pytest.raises(InvalidJudgeAnswer, match="expected 2 entries in `verdicts`, one per claim, got 3") as info:
        step_result(scorer, "analyze", {"preprocess": {"claims": ["a", "b"]}}, **{"context": CONTEXT})
    assert "must be one of yes, no, unsure, got 'maybe'" in str(info.value) and fake.request_count == 2


@pytest.mark.parametrize("factory", [create_faithfulness_scorer, create_hallucination_scorer])
@pytest.mark.parametrize("bad", ["", [], ["a", 3], 5])
def test_bad_context_option(factory: Any, bad: Any) -> None:
    with pytest.raises(ConfigError, match="`context` must be a non-empty string or a non-empty list of strings"):
        factory(JUDGE, context=bad)


def test_the_context_option_is_in_the_judge_steps_keys() -> None:
    a, b = create_faithfulness_scorer(JUDGE, context="A."), create_faithfulness_scorer(JUDGE, context="B.")
    for step in ("preprocess", "analyze", "generate_reason"):
        ctx = a.context_for(step, {"output": "x"}, {"preprocess": {"claims": ["x"]}})
        assert a.step(step).cache_key(ctx) != b.step(step).cache_key(ctx)
