"""What a step sees: the run being scored, the results of earlier steps, and the score."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from scorers._errors import ScorerInputError, describe_validation
from scorers._messages import check_text_field

__all__ = ("ScorerInput", "StepContext", "STEP_ORDER")

STEP_ORDER: tuple[str, ...] = ("preprocess", "analyze", "generate_score", "generate_reason")

class ScorerInput(BaseModel):
    """One run to score, with Mastra's camelCase names accepted and produced by alias.

    ``input``/``output``/``ground_truth`` are strings or lists of chat messages. A field is given when
    it is not None: ``ground_truth=""`` is a given, empty text.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, alias_generator=to_camel, extra="forbid")

    input: Any = None
    output: Any = Field(description="The answer to score (required).")
    ground_truth: Any = None
    request_context: dict[str, Any] | None = None
    run_id: str | None = None

    @field_validator("input", "output", "ground_truth")
    @classmethod
    def _text_or_messages(cls, value: Any, info: Any) -> Any:
        if value is None and info.field_name == "output":
            raise ValueError("`output` is None: a scorer needs the answer to score (\"\" is an empty answer)")
        check_text_field(value, info.field_name)
        return value

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
        """The run fields that can change a step's result (never run_id)."""
        return {
            "input": self.input,
            "output": self.output,
            "ground_truth": self.ground_truth,
            "request_context": self.request_context,
        }


class StepContext(BaseModel):
    """The sole input of every step: the run, the results of earlier steps and, for generate_reason, the score."""

    model_config = ConfigDict(frozen=True)

    run: ScorerInput
    results: dict[str, Any] = Field(default_factory=dict)
    score: float | None = None
