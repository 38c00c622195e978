"""Context precision and context relevance (SCORERS.md 1.4, 1.5): passages judged one by one, by index."""

from __future__ import annotations

from typing import Any

import pytest
from judged import JUDGE

from evalduck.scorers import (
    ConfigError,
    InvalidJudgeAnswer,
    NotScorable,
    create_context_precision_scorer,
    create_context_relevance_scorer,
)
from evalduck.scorers.prebuilt.context_precision import average_precision
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

QUESTION = "When was the Eiffel Tower completed?"
CONTEXT = ["Bananas are yellow fruit.", "The Eiffel Tower was completed in 1889.", "Paris has many museums."]
ANSWER = "The Eiffel Tower was completed in 1889."


def precision(*values: str, order: list[int] | None = None) -> dict[str, Any]:
    indices = order or list(range(len(values)))
    return {"analyze": {"verdicts": [{"context_index": i, "verdict": values[i], "reason": "r"} for i in indices]}}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["no", "yes", "no", "yes"], 0.5),  # SCORERS.md's example: (1/2 + 2/4) / 2
        (["yes", "yes", "no"], 1.0),
        (["no", "no", "yes"], 0.33),
        (["yes", "no", "yes"], 0.83),  # (1 + 2/3) / 2
        (["no", "no", "no"], 0.0),  # R = 0
        ([" YES", "No "], 1.0),
        ([], 0.0),
    ],
)
def test_precision_formula(values: list[str], expected: float, step_result: Any) -> None:
    assert step_result(create_context_precision_scorer(JUDGE), "generate_score", precision(*values), input=QUESTION, context=CONTEXT) == expected


def test_precision_sorts_by_index_and_scales(step_result: Any) -> None:
    shuffled = precision("no", "yes", "no", "yes", order=[3, 1, 0, 2])
    assert average_precision(shuffled["analyze"]["verdicts"]) == 0.5
    assert step_result(create_context_precision_scorer(JUDGE, scale=5), "generate_score", shuffled, input=QUESTION, context=CONTEXT) == 2.5
    last = precision("no", "no", "no", "yes")  # AP 1/4, times 0.5 is 0.125: rounds half up
    assert step_result(create_context_precision_scorer(JUDGE, scale=0.5), "generate_score", last, input=QUESTION, context=CONTEXT) == 0.13


def relevance(levels: list[str], used: list[bool], missing: int = 0) -> dict[str, Any]:
    evaluations = [
        {"context_index": i, "contextPiece": "p", "relevanceLevel": lv, "wasUsed": u, "reasoning": "r"}
        for i, (lv, u) in enumerate(zip(levels, used, strict=True))
    ]
    return {"analyze": {"evaluations": evaluations, "missingContext": [f"m{i}" for i in range(missing)], "overallAssessment": "a"}}


@pytest.mark.parametrize(
    ("levels", "used", "missing", "options", "expected"),
    [
        (["high", "high"], [True, True], 0, {}, 1.0),
        (["high", "medium", "low", "none"], [True] * 4, 0, {}, 0.5),  # 2.0 / 4
        (["high", "high"], [True, False], 0, {}, 0.9),  # one unused high passage
        (["medium", "low"], [True, True], 1, {}, 0.35),  # 0.5 - 0.15
        (["high"], [True], 5, {}, 0.5),  # missing penalty capped at 0.5
        (["low"], [False], 3, {}, 0.0),  # floored at 0
        (["medium", "none", "none", "none"], [True] * 4, 0, {}, 0.18),  # 0.7 / 4 = 0.175 rounds half up
        (["High ", " MEDIUM"], [False, True], 0, {"scale": 10}, 7.5),  # (0.85 - 0.1) * 10
        (["high"], [False], 2, {"penalties": {"unusedHighRelevanceContext": 0.5, "max_missing_context_penalty": 0.2}}, 0.3),
    ],
)
def test_relevance_formula(levels: list[str], used: list[bool], missing: int, options: dict[str, Any], expected: float, step_result: Any) -> None:
    scorer = create_context_relevance_scorer(JUDGE, **options)
    assert step_result(scorer, "generate_score", relevance(levels, used, missing), input=QUESTION, context=CONTEXT) == expected


def test_precision_against_the_fake_judge(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_context_precision_scorer(fake_judge).run(input=QUESTION, output=ANSWER, context=CONTEXT)
    assert [v["verdict"] for v in result.analyze_step_result["verdicts"]] == ["no", "yes", "no"]
    assert result.score == 0.5 and fake.request_count == 2 and result.preprocess_prompt is None


def test_relevance_against_the_fake_judge(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_context_relevance_scorer(fake_judge, context=CONTEXT).run(input=QUESTION, output=ANSWER)
    evaluations = result.analyze_step_result["evaluations"]
    assert [e["relevanceLevel"] for e in evaluations] == ["none", "high", "none"]
    assert [e["wasUsed"] for e in evaluations] == [False, True, False]
    assert result.score == 0.33 and fake.request_count == 2


def test_blank_output_judges_against_the_input(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_context_precision_scorer(fake_judge).run(input=QUESTION, output="", context=CONTEXT)
    assert "is useful for answering the input (the output is empty)" in result.analyze_prompt
    assert result.score == 0.5


@pytest.mark.parametrize(
    ("factory", "analysis", "expected"),
    [
        (create_context_precision_scorer, {"verdicts": []}, 0.0),
        (create_context_relevance_scorer, {"evaluations": [], "missingContext": [], "overallAssessment": "No context was given."}, 2.0),
    ],
)
def test_empty_context_is_a_shortcut(factory: Any, analysis: dict[str, Any], expected: float, fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = factory(fake_judge, scale=2).run(input=QUESTION, output=ANSWER, context=[])
    assert result.analyze_step_result == analysis and result.score == expected  # relevance: the scale
    assert result.reason and fake.request_count == 0


@pytest.mark.parametrize("factory", [create_context_precision_scorer, create_context_relevance_scorer])
def test_no_context_is_not_scorable(factory: Any, fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    with pytest.raises(NotScorable, match=r"needs a context to judge against.*scorer option `context`") as info:
        factory(fake_judge).run(input=QUESTION, output=ANSWER)
    assert factory.scorer_id in str(info.value) and fake.request_count == 0


@pytest.mark.parametrize(
    ("factory", "field", "entry"),
    [
        (create_context_precision_scorer, "verdicts", lambda i: {"context_index": i, "verdict": "yes", "reason": "r"}),
        (create_context_relevance_scorer, "evaluations",
         lambda i: {"context_index": i, "contextPiece": "p", "relevanceLevel": "high", "wasUsed": True, "reasoning": "r"}),
    ],
)
def test_indices_must_be_exactly_zero_to_n_minus_one(factory: Any, field: str, entry: Any, fake: FakeOpenAIServer, fake_judge: dict[str, Any], step_result: Any) -> None:
    rest = {"missingContext": [], "overallAssessment": "a"} if field == "evaluations" else {}
    fake.script({field: [entry(i) for i in (1, 2, 3)], **rest}, {field: [entry(i) for i in (0, 0, 1)], **rest})
    with pytest.raises(InvalidJudgeAnswer, match=r"`context_index` exactly 0\.\.2 \(0-based, 3 passage\(s\)\), got indices \[0, 0, 1\]"):
        step_result(factory(fake_judge), "analyze", None, **{"input": QUESTION, "context": CONTEXT})
    assert "got indices [1, 2, 3]" in fake.requests[1]["messages"][-1]["content"]
    fake.script({field: [entry(i) for i in (2, 0, 1)], **rest})
    assert len(step_result(factory(fake_judge), "analyze", None, **{"input": QUESTION, "context": CONTEXT})[field]) == 3


def test_relevance_levels_are_enumerated(fake: FakeOpenAIServer, fake_judge: dict[str, Any], step_result: Any) -> None:
    bad = {"evaluations": [{"context_index": 0, "contextPiece": "p", "relevanceLevel": "very", "wasUsed": True, "reasoning": "r"}],
           "missingContext": [], "overallAssessment": "a"}
    fake.script(bad, bad)
    with pytest.raises(InvalidJudgeAnswer, match="must be one of high, medium, low, none, got 'very'"):
        step_result(create_context_relevance_scorer(fake_judge), "analyze", None, **{"input": QUESTION, "context": ["p"]})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"penalties": {"missing_context_per_item": 1.5}}, "`penalties.missing_context_per_item` must be between 0 and 1, got 1.5"),
        ({"penalties": {"unknown": 0.1}}, "unknown option `penalties.unknown`"),
        ({"context": []}, "`context` must be a non-empty string"),
        ({"scale": 0}, "`scale`"),
    ],
)
def test_relevance_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_context_relevance_scorer(JUDGE, **options)


def test_precision_bad_options() -> None:
    with pytest.raises(ConfigError, match="unknown option `penalties`"):
        create_context_precision_scorer(JUDGE, penalties={})
