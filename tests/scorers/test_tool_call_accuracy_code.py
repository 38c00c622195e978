"""Code tool-call accuracy (SCORERS.md 2.4): binary, from the run's or the options' expectations."""

from __future__ import annotations

from typing import Any

import pytest

from evalduck.scorers import ConfigError, NotScorable
from evalduck.scorers import create_tool_call_accuracy_scorer_code as create
from evalduck.scorers.prebuilt.tool_call_accuracy_code import order_called


def calls(*names: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": n}} for n in names]},
            {"role": "assistant", "content": "done"}]


@pytest.mark.parametrize(
    ("actual", "expected", "strict", "result"),
    [
        (["a", "b", "c"], ["a", "c"], False, True),  # extra calls allowed
        (["b", "a"], ["a", "b"], False, False),
        (["a", "x"], ["a", "b"], False, False),  # b never called
        (["a", "b", "a"], ["b", "a"], False, False),  # first indices: b 1, a 0
        (["a", "a"], ["a", "a"], False, False),  # a repeated order passes only in strict mode
        (["a", "a"], ["a", "a"], True, True),
        (["a", "b", "c"], ["a", "c"], True, False),
    ],
)
def test_order(actual: list[str], expected: list[str], strict: bool, result: bool) -> None:
    assert order_called(actual, expected, strict) is result


@pytest.mark.parametrize(
    ("options", "output", "score"),
    [
        ({"expected_tool": "search"}, calls("search"), 1.0),
        ({"expected_tool": "search"}, calls("geo", "search"), 1.0),
        ({"expected_tool": "search", "strict_mode": True}, calls("geo", "search"), 0.0),
        ({"expected_tool": "search", "strict_mode": True}, calls("search"), 1.0),
        ({"expected_tool": "search"}, calls("geo"), 0.0),
        ({"expected_tool": "search"}, "I searched.", 0.0),  # a string has no tool calls
        ({"expected_tool_order": ["geo", "book"]}, calls("geo", "search", "book"), 1.0),
        ({"expected_tool_order": ["geo", "book"], "expected_tool": "nope"}, calls("geo", "book"), 1.0),  # order wins
        ({"expectedToolOrder": ["book", "geo"]}, calls("geo", "book"), 0.0),
        ({"expected_tool_order": ["geo"]}, calls(), 0.0),  # no calls
    ],
)
def test_scores(options: dict[str, Any], output: Any, score: float) -> None:
    assert create(options).run(output=output).score == score


def test_preprocess_shape() -> None:
    result = create(expected_tool="search").run(output=calls("geo", "search"))
    assert result.preprocess_step_result == {
        "expectedTool": "search", "actualTools": ["geo", "search"], "strictMode": False, "expectedToolOrder": None,
        "hasToolCalls": True, "correctToolCalled": True,
        "toolCallInfos": [{"toolName": "geo", "toolCallId": "1-0", "messageIndex": 1, "invocationIndex": 0},
                          {"toolName": "search", "toolCallId": "1-1", "messageIndex": 1, "invocationIndex": 1}],
        "correctOrderCalled": None,
    }


def test_the_runs_pair_replaces_the_options_pair() -> None:
    scorer = create(expected_tool="search", expected_tool_order=["a", "b"])
    run = scorer.run(output=calls("book"), expected_tool="book")
    assert run.score == 1.0
    assert (run.preprocess_step_result["expectedTool"], run.preprocess_step_result["expectedToolOrder"]) == ("book", None)
    assert scorer.run(output=calls("a", "b")).score == 1.0  # no run expectations: the options'


def test_score_from_results(step_result: Any) -> None:
    pre = {"hasToolCalls": True, "expectedToolOrder": ["a"], "correctOrderCalled": False, "correctToolCalled": True}
    assert step_result(create(), "generate_score", {"preprocess": pre}) == 0.0
    assert step_result(create(), "generate_score", {"preprocess": {**pre, "expectedToolOrder": None}}) == 1.0
    assert step_result(create(), "generate_score", {"preprocess": {**pre, "hasToolCalls": False}}) == 0.0


def test_no_expectation_is_not_scorable() -> None:
    scorer = create()  # creation without one is allowed: rows may carry them
    with pytest.raises(NotScorable) as info:
        scorer.run(output=calls("search"))
    message = str(info.value)
    assert message.startswith("code-tool-call-accuracy-scorer needs a tool expectation")
    assert "expectedTool" in message and "scorer option `expected_tool`" in message


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"expected_tool": ""}, "`expected_tool` must be a non-empty string"),
        ({"expected_tool_order": []}, "`expected_tool_order` must be a non-empty list"),
        ({"expectedToolOrder": ["a", 3]}, "`expected_tool_order[1]` must be a non-empty string"),
        ({"strict_mode": "yes"}, "`strict_mode`"),
        ({"strict_mode": 1}, "`strict_mode`"),
        ({"available_tools": []}, "unknown option `available_tools`"),
    ],
)
def test_bad_options(options: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        create(options)
    assert fragment in str(info.value)
