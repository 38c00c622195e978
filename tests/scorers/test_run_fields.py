"""SCORERS.md 0.1: the run fields context, expected_tool and expected_tool_order, and their cache keys."""

from __future__ import annotations

import pytest

from evalduck.scorers import ScorerInput, ScorerInputError, create_scorer, create_textual_difference_scorer


def test_keywords_and_mastra_dict() -> None:
    run = ScorerInput.from_call((), {"output": "a", "context": ["p1", "p2"], "expected_tool": "search",
                                     "expected_tool_order": ["search", "book"]})
    assert (run.context, run.expected_tool, run.expected_tool_order) == (["p1", "p2"], "search", ["search", "book"])
    mastra = ScorerInput.from_call(({"output": "a", "context": "one", "expectedTool": "t", "expectedToolOrder": ["t"]},), {})
    assert (mastra.context, mastra.expected_tool, mastra.expected_tool_order) == (["one"], "t", ["t"])
    assert mastra.model_dump(by_alias=True)["expectedToolOrder"] == ["t"]


def test_scorer_run_takes_them() -> None:
    seen = create_scorer("seen", generate_score=lambda ctx: len(ctx.run.context or []) + (ctx.run.expected_tool == "t"))
    assert seen.run(output="a", context=["x", "y"], expected_tool="t").score == 3


def test_empty_context_is_given() -> None:
    assert ScorerInput(output="a", context=[]).context == []
    assert ScorerInput(output="a").context is None


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"context": 3}, "`context` must be a string or a list of strings (passages), got int"),
        ({"context": ["ok", 2]}, "`context[1]` must be a string (one passage), got int"),
        ({"context": {"a": "b"}}, "`context` must be a string or a list of strings"),
        ({"expected_tool": ""}, "`expected_tool` must be a non-empty string"),
        ({"expected_tool": 5}, "`expected_tool` must be a non-empty string"),
        ({"expected_tool_order": []}, "`expected_tool_order` must be a non-empty list of tool names"),
        ({"expected_tool_order": "search"}, "`expected_tool_order` must be a non-empty list"),
        ({"expected_tool_order": ["a", " "]}, "`expected_tool_order[1]` must be a non-empty string"),
    ],
)
def test_bad_fields_are_named(fields: dict[str, object], fragment: str) -> None:
    with pytest.raises(ScorerInputError) as info:
        ScorerInput.from_call((), {"output": "a", **fields})
    assert fragment in str(info.value)


def test_keys_without_the_new_fields_are_unchanged() -> None:
    run = ScorerInput(input="q", output="a")
    assert set(run.fields_for_key()) == {"input", "output", "ground_truth", "request_context"}


@pytest.mark.parametrize(
    "fields",
    [{"context": []}, {"context": ["p"]}, {"expected_tool": "t"}, {"expected_tool_order": ["t", "u"]}],
)
def test_each_new_field_changes_every_steps_key(fields: dict[str, object]) -> None:
    scorer = create_textual_difference_scorer()
    plain = ScorerInput(input="q", output="a")
    given = ScorerInput(input="q", output="a", **fields)
    for step in scorer.steps:
        assert step.cache_key(scorer.context_for(step.name, plain)) != step.cache_key(scorer.context_for(step.name, given))
