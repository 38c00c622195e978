"""Prompt alignment (LLM judge), SCORERS.md 1.8: how well the output serves the prompt's intent,
requirements, completeness and expected format.

analyze judges the output against the user prompt, the system prompt, or both (``evaluation_mode``) on four
dimensions, each scored in [0, 1]; generate_score is their weighted sum (``alignment_score``), scaled and
rounded half up.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, Field

from evalduck.scorers._context import StepContext
from evalduck.scorers._errors import NotScorable
from evalduck.scorers._messages import input_text
from evalduck.scorers._scorer import Scorer
from evalduck.scorers._step import JudgePrompt
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._judged import (
    ScaledJudgeOptions,
    block,
    json_block,
    judge_scorer,
    reason_prompt,
    scaled,
    shortcut_reason,
)
from evalduck.scorers.prebuilt._options import parse_options
from evalduck.scorers.prebuilt._text import answer

__all__ = ("SCORER_ID", "VERSION", "PromptAlignment", "alignment_score", "create_prompt_alignment_scorer", "system_prompt")

SCORER_ID = "prompt-alignment-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "How well the output serves the prompt's intent, requirements, completeness and format (LLM judge)"
Mode = Literal["user", "system", "both"]
WEIGHTS: dict[str, tuple[float, float, float, float]] = {
    "user": (0.4, 0.3, 0.2, 0.1),
    "system": (0.35, 0.35, 0.15, 0.15),
    "both": (0.4, 0.3, 0.2, 0.1),
}

INSTRUCTIONS = """\
You assess how well a response serves the prompt it answers: its intent, its explicit requirements, its
completeness and the format and tone it asks for. Follow the task's instructions exactly and reply in the
format it asks for."""

Unit = Field(ge=0, le=1, description="A score from 0 (not at all) to 1 (fully).")


class IntentAlignment(BaseModel):
    score: float = Unit
    primaryIntent: str = Field(description="What the prompt mainly asks for, in one sentence.")
    isAddressed: bool = Field(description="Whether the response addresses that intent.")
    reasoning: str


class Requirement(BaseModel):
    requirement: str = Field(description="One explicit or clearly implied requirement of the prompt.")
    isFulfilled: bool
    reasoning: str


class RequirementsFulfillment(BaseModel):
    requirements: list[Requirement]
    overallScore: float = Unit


class Completeness(BaseModel):
    score: float = Unit
    missingElements: list[str] = Field(description="What the prompt asked for that the response leaves out.")
    reasoning: str


class ResponseAppropriateness(BaseModel):
    score: float = Unit
    formatAlignment: bool = Field(description="Whether the response has the format the prompt expects.")
    toneAlignment: bool = Field(description="Whether the response has the tone the prompt expects.")
    reasoning: str


class PromptAlignment(BaseModel):
    """analyze output: the four dimensions (Mastra's documented shape) and an overall assessment."""

    intentAlignment: IntentAlignment
    requirementsFulfillment: RequirementsFulfillment
    completeness: Completeness
    responseAppropriateness: ResponseAppropriateness
    overallAssessment: str


BLANK_OUTPUT: dict[str, Any] = {
    "intentAlignment": {"score": 0.0, "primaryIntent": "", "isAddressed": False, "reasoning": "The output is empty."},
    "requirementsFulfillment": {"requirements": [], "overallScore": 0.0},
    "completeness": {"score": 0.0, "missingElements": [], "reasoning": "The output is empty."},
    "responseAppropriateness": {
        "score": 0.0, "formatAlignment": False, "toneAlignment": False, "reasoning": "The output is empty.",
    },
    "overallAssessment": "The output is empty, so it serves none of the prompt.",
}


class PromptAlignmentOptions(ScaledJudgeOptions):
    evaluation_mode: Mode = "both"


def system_prompt(value: Any) -> str:
    """The content of the input's ``role: "system"`` messages joined by a blank line ("" for a string)."""
    if value is None or isinstance(value, str):
        return ""
    messages = [value] if isinstance(value, Mapping) else list(value)
    return "\n\n".join(str(m["content"]) for m in messages if m.get("role") == "system" and m.get("content") is not None)


def alignment_score(analysis: Mapping[str, Any], mode: str, scale: float) -> float:
    """``w1*I + w2*R + w3*C + w4*A`` with the mode's weights, scaled and rounded half up."""
    w1, w2, w3, w4 = WEIGHTS[mode]
    weighted = (
        w1 * analysis["intentAlignment"]["score"]
        + w2 * analysis["requirementsFulfillment"]["overallScore"]
        + w3 * analysis["completeness"]["score"]
        + w4 * analysis["responseAppropriateness"]["score"]
    )
    return scaled(weighted, scale)


def _prompts(ctx: StepContext, mode: str) -> dict[str, str]:
    """The prompt(s) the mode judges against, or NotScorable naming the mode and the other modes."""
    user = input_text(ctx.run.input) if ctx.run.input is not None else ""
    system = system_prompt(ctx.run.input)
    others = " or ".join(repr(m) for m in WEIGHTS if m != mode)
    if mode in ("user", "both") and not user.strip():
        raise NotScorable(
            f"{SCORER_ID} in evaluation_mode {mode!r} needs a user prompt: the input has no non-blank user "
            f"message; give `input` (a string or a user message), or use evaluation_mode {others}"
        )
    if mode == "system" and not system.strip():
        raise NotScorable(
            f"{SCORER_ID} in evaluation_mode 'system' needs a system prompt: the input has no `role: \"system\"` "
            f"message; give one in `input`, or use evaluation_mode {others}"
        )
    prompts = {}
    if mode in ("user", "both"):
        prompts["user_prompt"] = user
    if mode in ("system", "both") and system.strip():
        prompts["system_prompt"] = system
    return prompts


def _alignment_prompt(mode: str, ctx: StepContext) -> str:
    """Analyze's prompt. Asks for Mastra's four dimensions, each scored in [0, 1], against the mode's prompt
    or prompts; the requirements are listed so the requirements score can be checked against them."""
    prompts = _prompts(ctx, mode)
    against = " and ".join(name.replace("_", " ") for name in prompts)
    blocks = "\n\n".join(block(tag, text) for tag, text in prompts.items())
    return f"""\
Assess how well the output below serves the {against}. Score each dimension from 0 (not at all) to 1 (fully):
- intentAlignment: the prompt's primary intent, and whether the output addresses it;
- requirementsFulfillment: each explicit or clearly implied requirement (instructions, constraints, what
  must be included), whether it is fulfilled, and an overall score;
- completeness: whether the output covers everything asked for, listing the missing elements;
- responseAppropriateness: whether the format (length, structure, language) and the tone are what the
  prompt expects.
Then sum up in overallAssessment. When a system prompt is given, its instructions are requirements too.

{blocks}

{block("output", answer(ctx.run))}

Reply with a JSON object {{"intentAlignment": {{"score", "primaryIntent", "isAddressed", "reasoning"}},
"requirementsFulfillment": {{"requirements": [{{"requirement", "isFulfilled", "reasoning"}}], "overallScore"}},
"completeness": {{"score", "missingElements": [...], "reasoning"}}, "responseAppropriateness": {{"score",
"formatAlignment", "toneAlignment", "reasoning"}}, "overallAssessment"}}."""


def _blank_output_analysis(mode: str, ctx: StepContext) -> Any:
    """Analyze without a request: ``BLANK_OUTPUT`` (a copy) for a blank output, after the mode's prompts
    are checked (NotScorable first, whatever the output); None to ask the judge."""
    _prompts(ctx, mode)  # NotScorable first, whatever the output
    return copy.deepcopy(BLANK_OUTPUT) if not answer(ctx.run).strip() else None


def _alignment_reason_prompt(mode: str, ctx: StepContext) -> str:
    """generate_reason's prompt. Shows the mode's prompt(s) and the four dimensions, so the explanation
    names the gaps."""
    prompts = _prompts(ctx, mode)
    return reason_prompt(
        f"prompt alignment, {mode} mode (how well the output serves the prompt; higher is better)",
        "The output below received the prompt-alignment score given here. Explain why, naming the "
        "intent, the unmet requirements and what is missing.",
        *(block(tag, text) for tag, text in prompts.items()),
        block("output", answer(ctx.run)),
        json_block("analysis", ctx.results.get("analyze") or {}),
        score=ctx.score,
    )


def _blank_output_reason(ctx: StepContext) -> str:
    """generate_reason's fixed sentence for a blank output (nothing was judged)."""
    return f"The score is {ctx.score}: the output is empty, so it serves none of the prompt."


def _weighted_alignment(mode: str, scale: float, ctx: StepContext) -> float:
    """generate_score: ``alignment_score`` of analyze's result with the mode's weights."""
    return alignment_score(ctx.results["analyze"], mode, scale)


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION, needs_judge=True, reads=("input (user, system)", "output"))
def create_prompt_alignment_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """How well the output serves the prompt's intent, requirements, completeness and format, by an LLM judge.

    Args:
        options: a mapping of the options below (snake_case or Mastra's camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        model: litellm model string; default $EVALDUCK_JUDGE_MODEL, a ConfigError if neither is set.
        evaluation_mode: "user" (the first user message), "system" (the system messages) or "both" (the
            default: the user prompt, and the system prompt too when there is one).
        scale: the score's maximum, > 0 (default 1.0).
        temperature, timeout, api_base, max_tokens, retries, extra, judge: judge settings (JudgeSettings).

    Example:
        >>> create_prompt_alignment_scorer(model="openai/gpt-4o-mini", evaluationMode="system").options["evaluation_mode"]
        'system'
    """
    opts = parse_options(PromptAlignmentOptions, options, kwargs)
    scale, mode = opts.scale, opts.evaluation_mode
    blank_output = partial(_blank_output_analysis, mode)
    return judge_scorer(
        SCORER_ID,
        opts,
        version=VERSION,
        description=DESCRIPTION,
        instructions=INSTRUCTIONS,
        options={"scale": scale, "evaluation_mode": mode},
        analyze=JudgePrompt(prompt=partial(_alignment_prompt, mode), output_model=PromptAlignment, shortcut=blank_output),
        generate_score=partial(_weighted_alignment, mode, scale),
        generate_reason=JudgePrompt(
            prompt=partial(_alignment_reason_prompt, mode),
            shortcut=shortcut_reason(blank_output, _blank_output_reason),
        ),
        step_params={
            "analyze": {"evaluation_mode": mode},
            "generate_reason": {"evaluation_mode": mode},
            "generate_score": {"scale": scale, "evaluation_mode": mode},
        },
    )
