"""SCORERS.md 0.2: tool calls in chat-message outputs, their validation and extraction."""

from __future__ import annotations

from typing import Any

import pytest

from evalduck.scorers import ScorerInput, ScorerInputError
from evalduck.scorers._messages import output_text, plain_text
from evalduck.scorers._tools import actual_tools, tool_call_infos, tool_results


def call(name: str, call_id: str | None = None, arguments: Any = "{}") -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        out["id"] = call_id
    return out


AGENT = [
    {"role": "user", "content": "Weather in Paris, then book?"},
    {"role": "assistant", "content": None, "tool_calls": [call("weather", "c1"), call("geo")]},
    {"role": "tool", "content": "18 C, sunny", "tool_call_id": "c1"},
    {"role": "tool", "content": "48.85,2.35"},
    {"role": "assistant", "tool_calls": [call("book", arguments={"city": "Paris"})], "extra": 1},
    {"role": "assistant", "content": "Booked; 18 C and sunny."},
]


def test_extraction_in_message_then_call_order() -> None:
    assert actual_tools(AGENT) == ["weather", "geo", "book"]
    assert tool_call_infos(AGENT) == [
        {"toolName": "weather", "toolCallId": "c1", "messageIndex": 1, "invocationIndex": 0},
        {"toolName": "geo", "toolCallId": "1-1", "messageIndex": 1, "invocationIndex": 1},
        {"toolName": "book", "toolCallId": "4-0", "messageIndex": 4, "invocationIndex": 0},
    ]
    assert tool_results(AGENT) == ["18 C, sunny", "48.85,2.35"]


def test_string_output_and_legacy_function_call_have_no_calls() -> None:
    assert actual_tools("I called search") == [] and tool_call_infos(None) == []
    legacy = [{"role": "assistant", "content": "", "function_call": {"name": "search", "arguments": "{}"}}]
    assert actual_tools(legacy) == []


def test_text_helpers_skip_none_content() -> None:
    assert output_text(AGENT) == "Booked; 18 C and sunny."
    assert plain_text([{"role": "assistant", "content": None, "tool_calls": []}, {"role": "user", "content": "b"}]) == "b"


def test_valid_run_with_tool_calls() -> None:
    assert ScorerInput(output=AGENT).output == AGENT


@pytest.mark.parametrize(
    ("output", "fragment"),
    [
        ([{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": "search"}],
         "`output[1].tool_calls` must be a list of tool calls, got str"),
        ([{"role": "tool", "content": "x", "tool_calls": []}], "`output[0].tool_calls` is only allowed on an assistant"),
        ([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"function": {"name": ""}}]}],
         "`output[1].tool_calls[0].function.name` must be a non-empty string"),
        ([{"role": "assistant", "tool_calls": [call("a"), {"function": {"arguments": "{}"}}]}],
         "`output[0].tool_calls[1].function.name` must be a non-empty string, got None"),
        ([{"role": "assistant", "tool_calls": [{"name": "a"}]}], "`output[0].tool_calls[0].function` must be a mapping"),
        ([{"role": "assistant", "tool_calls": ["a"]}], "`output[0].tool_calls[0]` must be a tool call"),
        ([{"role": "assistant", "tool_calls": [{"id": 3, "function": {"name": "a"}}]}], "`output[0].tool_calls[0].id` must be a string"),
        ([{"role": "assistant", "content": None}], "`output[0]`.content must be a string, got NoneType"),
        ([{"role": "tool"}], "`output[0]`.content must be a string, got NoneType"),
    ],
)
def test_bad_tool_calls_name_the_path(output: Any, fragment: str) -> None:
    with pytest.raises(ScorerInputError) as info:
        ScorerInput.from_call((), {"output": output})
    assert fragment in str(info.value)


def test_single_message_path() -> None:
    with pytest.raises(ValueError, match=r"`output.tool_calls\[0\].function.name`"):
        ScorerInput(output={"role": "assistant", "tool_calls": [{"function": {"name": 1}}]})
