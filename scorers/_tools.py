"""Tool calls in chat-message outputs (SCORERS.md 0.2): their validation, and what scorers read of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ("check_tool_calls", "actual_tools", "tool_call_infos", "tool_results")


def check_tool_calls(message: Mapping[str, Any], where: str) -> None:
    """Raise ValueError unless ``message``'s ``tool_calls`` (when present) is a list of OpenAI-style calls on
    an assistant message, each with a non-empty ``function.name``; ``where`` is the message's path
    (``output[1]``), so the error names the exact key (``output[1].tool_calls[0].function.name``)."""
    if "tool_calls" not in message:
        return
    calls = message["tool_calls"]
    if message.get("role") != "assistant":
        raise ValueError(f"`{where}.tool_calls` is only allowed on an assistant message, got role {message.get('role')!r:.40}")
    if not isinstance(calls, Sequence) or isinstance(calls, (str, bytes, bytearray)):
        raise ValueError(f"`{where}.tool_calls` must be a list of tool calls, got {type(calls).__name__}: {calls!r:.80}")
    for j, call in enumerate(calls):
        path = f"{where}.tool_calls[{j}]"
        if not isinstance(call, Mapping):
            raise ValueError(f"`{path}` must be a tool call {{'function': {{'name', 'arguments'}}}}, got {call!r:.80}")
        if call.get("id") is not None and not isinstance(call["id"], str):
            raise ValueError(f"`{path}.id` must be a string, got {call['id']!r:.80}")
        function = call.get("function")
        if not isinstance(function, Mapping):
            raise ValueError(f"`{path}.function` must be a mapping with a `name`, got {function!r:.80}")
        name = function.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"`{path}.function.name` must be a non-empty string, got {name!r:.80}")


def _messages(output: Any) -> list[Mapping[str, Any]]:
    if output is None or isinstance(output, str):
        return []  # a string output has no tool calls
    return [output] if isinstance(output, Mapping) else list(output)


def tool_call_infos(output: Any) -> list[dict[str, Any]]:
    """Every call of the output's assistant messages, in message order then call order, as Mastra's
    ``toolCallInfos``: ``toolName``, ``toolCallId`` (the call's id, else "<messageIndex>-<invocationIndex>"),
    ``messageIndex`` (counting every message of the output) and ``invocationIndex``."""
    infos: list[dict[str, Any]] = []
    for i, message in enumerate(_messages(output)):
        if message.get("role") != "assistant":
            continue
        for j, call in enumerate(message.get("tool_calls") or ()):
            call_id = call.get("id")
            infos.append({
                "toolName": call["function"]["name"],
                "toolCallId": call_id if isinstance(call_id, str) else f"{i}-{j}",
                "messageIndex": i,
                "invocationIndex": j,
            })
    return infos


def actual_tools(output: Any) -> list[str]:
    """The names of the tools the output called, in order (Mastra's ``actualTools``)."""
    return [info["toolName"] for info in tool_call_infos(output)]


def tool_results(output: Any) -> list[str]:
    """The content of the output's ``role: "tool"`` messages, in order (what the tools returned)."""
    return [str(m["content"]) for m in _messages(output) if m.get("role") == "tool" and m.get("content") is not None]
