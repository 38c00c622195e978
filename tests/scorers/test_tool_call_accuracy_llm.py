"""Tool-call accuracy, judge (SCORERS.md 1.9): each call judged appropriate or not, and the missing tools."""

from __future__ import annotations

from typing import Any

import pytest
from judged import JUDGE

from evalduck.scorers import ConfigError, InvalidJudgeAnswer, ScorerInputError, create_tool_call_accuracy_scorer_llm
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city.", "parameters": {}}},
    {"name": "send_email", "description": "Send an email to someone."},
]
CALLS = [
    {"role": "user", "content": "ignored: outputs are read for assistant calls only"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"function": {"name": "send_email", "arguments": {}}},
    ]},
    {"role": "tool", "content": "Sunny, 21 C", "tool_call_id": "call_1"},
    {"role": "assistant", "content": "It is sunny in Paris."},
]


def evaluations(*appropriate: bool, missing: int = 0) -> dict[str, Any]:
    return {"analyze": {
        "evaluations": [{"toolCalled": f"t{i}", "wasAppropriate": a, "reasoning": "r"} for i, a in enumerate(appropriate)],
        "missingTools": [f"m{i}" for i in range(missing)],
    }}


@pytest.mark.parametrize(
    ("appropriate", "missing", "expected"),
    [
        ((True, False), 0, 0.5),
        ((True, False, False), 0, 0.33),
        ((True, True, False), 1, 0.67),  # missing tools do not count when there are calls
        ((True,) + (False,) * 7, 0, 0.13),
        ((), 0, 1.0),  # no calls, none needed
        ((), 2, 0.0),  # no calls, but some were needed
    ],
)
def test_formula(appropriate: tuple[bool, ...], missing: int, expected: float, step_result: Any) -> None:
    assert step_result(create_tool_call_accuracy_scorer_llm(JUDGE), "generate_score", evaluations(*appropriate, missing=missing), input="q") == expected


def test_run_against_the_fake_judge(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    scorer = create_tool_call_accuracy_scorer_llm(fake_judge, available_tools=TOOLS)
    result = scorer.run(input="What's the weather in Paris?", output=CALLS)
    assert result.preprocess_step_result == {
        "actualTools": ["get_weather", "send_email"],
        "hasToolCalls": True,
        "toolCallInfos": [
            {"toolName": "get_weather", "toolCallId": "call_1", "messageIndex": 1, "invocationIndex": 0},
            {"toolName": "send_email", "toolCallId": "1-1", "messageIndex": 1, "invocationIndex": 1},
        ],
    }
    assert [e["wasAppropriate"] for e in result.analyze_step_result["evaluations"]] == [True, False]
    assert result.score == 0.5 and fake.request_count == 2  # preprocess is code
    assert '"name": "get_weather",\n  "description": "Current weather for a city."' in result.analyze_prompt


def test_no_calls_are_still_judged(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    scorer = create_tool_call_accuracy_scorer_llm(fake_judge, available_tools=TOOLS)
    needed = scorer.run(input="What's the weather in Paris?", output="I think it is sunny.")
    assert needed.preprocess_step_result == {"actualTools": [], "hasToolCalls": False, "toolCallInfos": []}
    assert needed.analyze_step_result == {"evaluations": [], "missingTools": ["get_weather"]} and needed.score == 0.0
    assert scorer.run(input="Tell me a joke.", output="Why did the duck...").score == 1.0
    assert fake.request_count == 4


def test_one_evaluation_per_call(fake: FakeOpenAIServer, fake_judge: dict[str, Any], step_result: Any) -> None:
    one = {"evaluations": [{"toolCalled": "get_weather", "wasAppropriate": True, "reasoning": "r"}], "missingTools": []}
    fake.script(one, one)
    with pytest.raises(InvalidJudgeAnswer, match="expected 2 entries in `evaluations`, one per tool call, got 1"):
        step_result(create_tool_call_accuracy_scorer_llm(fake_judge), "analyze", {"preprocess": {"actualTools": ["a", "b"], "hasToolCalls": True, "toolCallInfos": []}}, **{"input": "q"})


def test_needs_the_request() -> None:
    with pytest.raises(ScorerInputError, match="llm-tool-call-accuracy-scorer needs `input`"):
        create_tool_call_accuracy_scorer_llm(JUDGE).run(output=CALLS)


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("get_weather", "`available_tools` must be a list of tools"),
        ([{"description": "no name"}], r"`available_tools\[0\]\.name` must be a non-empty string"),
        ([{"type": "function", "function": {"name": " "}}], r"`available_tools\[0\]\.name` must be a non-empty string"),
        ([{"name": "a"}, 7], r"`available_tools\[1\]` must be a tool"),
        ([{"name": "a", "description": 3}], r"`available_tools\[0\]\.description` must be a string"),
    ],
)
def test_bad_available_tools(tools: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_tool_call_accuracy_scorer_llm(JUDGE, available_tools=tools)


def test_no_scale_option() -> None:
    with pytest.raises(ConfigError, match="unknown option `scale`"):
        create_tool_call_accuracy_scorer_llm(JUDGE, scale=2)
