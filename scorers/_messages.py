"""Text out of a run field that may be a string or a list of chat messages."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from evalduck.scorers._tools import check_tool_calls

__all__ = ("check_text_field", "input_text", "output_text", "plain_text", "split_sentences")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def check_text_field(value: Any, field: str) -> None:
    """Raise ValueError unless ``value`` is None, a string, a chat message, or a list of chat messages.

    A chat message is a mapping with a string ``role`` and a string ``content``; an assistant message with
    ``tool_calls`` (SCORERS.md 0.2) may have ``content`` None or absent. The one rule for these fields:
    scorer runs (``ScorerInput``) and dataset rows (``flows/datasets``) both check with it.
    """
    if value is None or isinstance(value, str):
        return
    single = isinstance(value, Mapping)
    messages = [value] if single else value
    if not isinstance(messages, Sequence) or isinstance(messages, (bytes, bytearray)):
        raise ValueError(
            f"`{field}` must be a string or a list of chat messages, got {type(value).__name__}: {value!r:.80}"
        )
    for i, message in enumerate(messages):
        where = f"`{field}`" if single else f"`{field}[{i}]`"
        if not isinstance(message, Mapping):
            raise ValueError(f"{where} must be a chat message {{'role', 'content'}}, got {message!r:.80}")
        if not isinstance(message.get("role"), str):
            raise ValueError(f"{where}.role must be a string, got {message.get('role')!r:.80}")
        content = message.get("content")
        if content is None and message.get("role") == "assistant" and "tool_calls" in message:
            pass  # a message that only calls tools
        elif not isinstance(content, str):
            raise ValueError(f"{where}.content must be a string, got {type(content).__name__}: {content!r:.80}")
        check_tool_calls(message, field if single else f"{field}[{i}]")


def _messages(value: Any) -> list[Mapping[str, Any]]:
    return [value] if isinstance(value, Mapping) else list(value)


def input_text(value: Any) -> str:
    """The question: the string itself, or the content of the first user message ("" if none)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return next((str(m["content"]) for m in _messages(value) if m.get("role") == "user"), "")


def output_text(value: Any) -> str:
    """The answer: the string itself, or the assistant messages' content joined by newlines."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return "\n".join(
        str(m["content"]) for m in _messages(value) if m.get("role") == "assistant" and m.get("content") is not None
    )


def plain_text(value: Any) -> str:
    """A ground truth or other reference: a string, or the text of its messages."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return "\n".join(str(m["content"]) for m in _messages(value) if m.get("content") is not None)


def split_sentences(text: str) -> list[str]:
    """Sentences, split after . ! ? followed by whitespace; only that whitespace is dropped, so trailing
    text without punctuation is a sentence too."""
    return [part for part in (p.strip() for p in _SENTENCE_END.split(text.strip())) if part]
