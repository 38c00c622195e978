"""What a step sees: the run being scored, the results of earlier steps, and the score."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from evalduck.scorers._errors import ScorerInputError, describe_validation
from evalduck.scorers._messages import check_text_field

__all__ = ("ScorerInput", "StepContext", "STEP_ORDER", "check_context", "check_expected_tool", "check_tool_order")

STEP_ORDER: tuple[str, ...] = ("preprocess", "analyze", "generate_score", "generate_reason")

# The run fields SCORERS.md 0.1 added: in a step's key only when given, so the keys of runs without them
# stay the bytes they were (tests/flows/test_pinned_digests.py).
_KEYED_WHEN_GIVEN: tuple[str, ...] = ("context", "expected_tool", "expected_tool_order")


def check_context(value: Any, field: str = "context") -> list[str] | None:
    """Retrieved passages as a list of strings: a string is one passage, ``[]`` a given, empty context.

    The one rule for the field: scorer runs and dataset rows (``flows/datasets``) both check with it."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        for i, passage in enumerate(value):
            if not isinstance(passage, str):
                raise ValueError(f"`{field}[{i}]` must be a string (one passage), got {type(passage).__name__}: {passage!r:.80}")
        return list(value)
    raise ValueError(f"`{field}` must be a string or a list of strings (passages), got {type(value).__name__}: {value!r:.80}")


def check_expected_tool(value: Any, field: str = "expected_tool") -> str | None:
    """The one tool the output should call: a non-empty string."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"`{field}` must be a non-empty string (a tool name), got {value!r:.80}")
    return value


def check_tool_order(value: Any, field: str = "expected_tool_order") -> list[str] | None:
    """The tools the output should call, in order: a non-empty list of non-empty strings."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"`{field}` must be a non-empty list of tool names, got {value!r:.80}")
    for i, name in enumerate(value):
        check_expected_tool(name, f"{field}[{i}]")
    return list(value)


class ScorerInput(BaseModel):
    """One run to score, with Mastra's camelCase names accepted and produced by alias.

    ``input``/``output``/``ground_truth`` are strings or lists of chat messages (the output's assistant
    messages may carry ``tool_calls``). A field is given when it is not None: ``ground_truth=""`` is a
    given, empty text, ``context=[]`` a given, empty context. ``context`` is the retrieved passages (a
    string is one), ``expected_tool``/``expected_tool_order`` what the output should call (SCORERS.md 0.1).
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, alias_generator=to_camel, extra="forbid")

    input: Any = None
    output: Any = Field(description="The answer to score (required).")
    ground_truth: Any = None
    request_context: dict[str, Any] | None = None
    run_id: str | None = None
    context: list[str] | None = None
    expected_tool: str | None = None
    expected_tool_order: list[str] | None = None

    @field_validator("input", "output", "ground_truth")
    @classmethod
    def _text_or_messages(cls, value: Any, info: Any) -> Any:
        if value is None and info.field_name == "output":
            raise ValueError("`output` is None: a scorer needs the answer to score (\"\" is an empty answer)")
        check_text_field(value, info.field_name)
        return value

    @field_validator("context", mode="before")
    @classmethod
    def _passages(cls, value: Any) -> list[str] | None:
        return check_context(value)

    @field_validator("expected_tool", mode="before")
    @classmethod
    def _tool(cls, value: Any) -> str | None:
        return check_expected_tool(value)

    @field_validator("expected_tool_order", mode="before")
    @classmethod
    def _tool_order(cls, value: Any) -> list[str] | None:
        return check_tool_order(value)

    @field_validator("request_context")
    @classmethod
    def _json_context(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"`request_context` must be JSON-serialisable: {exc}") from None
        return value

    @classmethod
    def from_call(cls, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> "ScorerInput":
        """Accept ``run(input=..., output=...)``, ``run({"input", "output", "groundTruth"})`` or a ScorerInput."""
        if args:
            if len(args) > 1 or kwargs:
                raise ScorerInputError("pass either one run dict/ScorerInput or keyword arguments, not both")
            (value,) = args
            if isinstance(value, ScorerInput):
                return value
            if not isinstance(value, Mapping):
                raise ScorerInputError(f"a run must be a dict or ScorerInput, got {type(value).__name__}")
            data = dict(value)
        else:
            data = dict(kwargs)
        if "output" not in data:
            raise ScorerInputError("missing `output`: a scorer needs the answer to score")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ScorerInputError("invalid run: " + describe_validation(exc, noun="field")) from None

    def fields_for_key(self) -> dict[str, Any]:
        """The run fields that can change a step's result (never run_id); the 0.1 fields only when given."""
        fields = {
            "input": self.input,
            "output": self.output,
            "ground_truth": self.ground_truth,
            "request_context": self.request_context,
        }
        for name in _KEYED_WHEN_GIVEN:
            value = getattr(self, name)
            if value is not None:
                fields[name] = value
        return fields


class StepContext(BaseModel):
    """The sole input of every step: the run, the results of earlier steps and, for generate_reason, the score."""

    model_config = ConfigDict(frozen=True)

    run: ScorerInput
    results: dict[str, Any] = Field(default_factory=dict)
    score: float | None = None
