"""What steps and scorers return: snake_case attributes, Mastra's camelCase under ``by_alias=True``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = ("JudgeUsage", "StepOutput", "ScorerResult")

_CONFIG = ConfigDict(frozen=True, populate_by_name=True, alias_generator=to_camel)


class JudgeUsage(BaseModel):
    """One judge request: what it cost and how long it took."""

    model_config = _CONFIG

    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = Field(default=None, description="USD, when litellm knows the model's price.")
    latency_s: float
    repair: bool = Field(default=False, description="True for the repair request after an invalid answer.")


class StepOutput(BaseModel):
    """One step's outcome: its JSON result, the prompt it sent (judge steps), and per-request usage."""

    model_config = _CONFIG

    result: Any
    prompt: str | None = None
    usage: list[JudgeUsage] = Field(default_factory=list)


class ScorerResult(BaseModel):
    """A scored run, shaped like Mastra's ``.run()`` result.

    ``model_dump(by_alias=True)`` gives runId, score, reason, preprocessPrompt, preprocessStepResult,
    analyzePrompt, analyzeStepResult, generateScorePrompt, generateReasonPrompt, input, output, groundTruth
    (plus scorerId, scorerVersion, requestContext and usage).
    """

    model_config = _CONFIG

    run_id: str | None = None
    score: float
    reason: str | None = None
    preprocess_prompt: str | None = None
    preprocess_step_result: Any = None
    analyze_prompt: str | None = None
    analyze_step_result: Any = None
    generate_score_prompt: str | None = None
    generate_reason_prompt: str | None = None
    input: Any = None
    output: Any = None
    ground_truth: Any = None
    request_context: dict[str, Any] | None = None
    scorer_id: str
    scorer_version: str
    usage: list[JudgeUsage] = Field(default_factory=list)
