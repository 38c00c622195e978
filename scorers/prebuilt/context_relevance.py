"""Context relevance (LLM judge), SCORERS.md 1.5: how useful the retrieved passages were, with penalties
for relevant passages the output ignored and for information no passage gave.

analyze (after resolving the context: _passages.py) rates each passage's relevance (high,
medium, low, none) and whether the output used it, and lists the missing context; generate_score is
``relevance_score``. An empty context scores ``scale`` (the answer had no context to misuse).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from functools import partial
from typing import Annotated, Any

from pydantic import BaseModel, Field, StrictInt, field_validator

from evalduck.scorers._context import StepContext
from evalduck.scorers._scorer import Scorer
from evalduck.scorers._step import JudgePrompt
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._judged import (
    ContextJudgeOptions,
    OneOf,
    block,
    context_block,
    context_resolver,
    json_block,
    judge_scorer,
    normalised,
    one_per_passage,
    reason_prompt,
    scaled,
    shortcut_reason,
)
from evalduck.scorers.prebuilt._options import OptionsModel, parse_options
from evalduck.scorers.prebuilt._text import answer, question

__all__ = ("SCORER_ID", "VERSION", "ContextEvaluations", "Penalties", "create_context_relevance_scorer", "relevance_score")

SCORER_ID = "context-relevance-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "How relevant the retrieved passages were, less penalties for unused and missing context (LLM judge)"
WEIGHTS = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}
EMPTY_CONTEXT = {"evaluations": [], "missingContext": [], "overallAssessment": "No context was given."}

INSTRUCTIONS = """\
You assess retrieval for question answering: how relevant each retrieved passage is to the question, whether
the answer used it, and what information the question needed that no passage gave. Follow the task's
instructions exactly and reply in the format it asks for."""


class PassageEvaluation(BaseModel):
    context_index: StrictInt = Field(description="The passage's 0-based position in the context.")
    contextPiece: str = Field(description="The passage, or its gist.")
    relevanceLevel: Annotated[str, OneOf(*WEIGHTS)] = Field(
        description="How relevant the passage is to the input: 'high', 'medium', 'low' or 'none'."
    )
    wasUsed: bool = Field(description="Whether the output uses information from the passage.")
    reasoning: str = Field(description="One short sentence justifying the rating.")


class ContextEvaluations(BaseModel):
    """analyze output: one evaluation per passage, the missing context, an overall assessment."""

    evaluations: list[PassageEvaluation] = Field(description="Exactly one evaluation per passage, indices 0..n-1.")
    missingContext: list[str] = Field(description="Information the input needed that no passage gave.")
    overallAssessment: str = Field(description="One or two sentences on the context as a whole.")


class Penalties(OptionsModel):
    """The ``penalties`` option (SCORERS.md 1.5): what the score loses per unused high-relevance passage and
    per missing piece of context, and the cap on the latter."""

    unused_high_relevance_context: float = 0.1
    missing_context_per_item: float = 0.15
    max_missing_context_penalty: float = 0.5

    @field_validator("*")
    @classmethod
    def _unit(cls, value: float, info: Any) -> float:
        if not 0 <= value <= 1:
            raise ValueError(f"`penalties.{info.field_name}` must be between 0 and 1, got {value!r}")
        return value


class ContextRelevanceOptions(ContextJudgeOptions):
    penalties: Penalties = Penalties()


def relevance_score(analysis: Mapping[str, Any], penalties: Penalties, scale: float) -> float:
    """SCORERS.md 1.5: the mean relevance weight, less the unused-high and missing-context penalties."""
    evaluations = list(analysis.get("evaluations") or [])
    if not evaluations:
        return scale
    levels = [normalised(e["relevanceLevel"]) for e in evaluations]
    total = 0.0
    for level in levels:
        total += WEIGHTS[level]
    base = total / len(evaluations)
    unused = penalties.unused_high_relevance_context * sum(
        level == "high" and not e["wasUsed"] for level, e in zip(levels, evaluations, strict=True)
    )
    missing = min(
        penalties.missing_context_per_item * len(analysis.get("missingContext") or []),
        penalties.max_missing_context_penalty,
    )
    return scaled(max(0.0, base - unused - missing), scale)


def _relevance_prompt(context: Callable[[StepContext], list[str]], ctx: StepContext) -> str:
    """Analyze's prompt. Asks for a four-level rating per passage and whether the output used it, plus what
    was missing: the score rewards relevant context and penalises ignoring it or lacking it."""
    passages = context(ctx)
    return f"""\
Evaluate each passage of the context below against the input (the question) and the output (the answer):
- `relevanceLevel`: how relevant the passage is to the input: "high" (directly answers or is needed),
  "medium" (useful background), "low" (barely related) or "none" (unrelated);
- `wasUsed`: whether the output uses information from the passage.
Give exactly {len(passages)} evaluation(s), one per passage, each with its 0-based `context_index` (0 to
{len(passages) - 1}) and the passage (or its gist) as `contextPiece`. Then list in `missingContext` the
information the input needed that no passage gave (empty when the context covers it), and sum up in
`overallAssessment`.

{block("input", question(ctx.run, SCORER_ID))}

{block("output", answer(ctx.run))}

{context_block(passages)}

Reply with a JSON object {{"evaluations": [{{"context_index": 0, "contextPiece": "...", "relevanceLevel":
"high" | "medium" | "low" | "none", "wasUsed": true | false, "reasoning": "..."}}, ...], "missingContext":
[...], "overallAssessment": "..."}}."""


def _empty_context_analysis(context: Callable[[StepContext], list[str]], ctx: StepContext) -> Any:
    """Analyze without a request: ``EMPTY_CONTEXT`` (a copy) for an empty context; None to ask the judge."""
    return copy.deepcopy(EMPTY_CONTEXT) if not context(ctx) else None


def _relevance_reason_prompt(context: Callable[[StepContext], list[str]], ctx: StepContext) -> str:
    """generate_reason's prompt. Shows the passages and the analysis, so the explanation names relevant,
    ignored and missing context."""
    return reason_prompt(
        "context relevance (how relevant and how used the passages were; higher is better)",
        "The retrieved context below received the relevance score given here. Explain why, naming "
        "relevant passages, ignored ones and missing information.",
        block("input", question(ctx.run, SCORER_ID)),
        context_block(context(ctx)),
        json_block("analysis", ctx.results.get("analyze") or {}),
        score=ctx.score,
    )


def _no_context_reason(ctx: StepContext) -> str:
    """generate_reason's fixed sentence for an empty context (nothing was judged)."""
    return f"The score is {ctx.score}: no context was given, so none was misused."


def _penalised_relevance(penalties: Penalties, scale: float, ctx: StepContext) -> float:
    """generate_score: ``relevance_score`` of analyze's result."""
    return relevance_score(ctx.results.get("analyze") or {}, penalties, scale)


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION,
          needs_judge=True, reads=("input", "output", "context (else option)"))
def create_context_relevance_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """How relevant and how used the retrieved passages were, with penalties, by an LLM judge.

    Its context follows SCORERS.md 0.1's context resolution (the rule: ``scorers/prebuilt/_passages.py``).

    Args:
        options: a mapping of the options below (snake_case or Mastra's camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        model: litellm model string; default $EVALDUCK_JUDGE_MODEL, a ConfigError if neither is set.
        context: passages for runs that give none: a non-empty string or list of strings.
        penalties: ``unused_high_relevance_context`` (0.1 per highly relevant passage the output did not
            use), ``missing_context_per_item`` (0.15 per missing item), ``max_missing_context_penalty``
            (0.5); each in [0, 1], a partial mapping merges with these defaults.
        scale: the score's maximum, > 0 (default 1.0).
        temperature, timeout, api_base, max_tokens, retries, extra, judge: judge settings (JudgeSettings).

    Example:
        >>> scorer = create_context_relevance_scorer(model="openai/gpt-4o-mini", penalties={"missingContextPerItem": 0.2})
        >>> scorer.options["penalties"]["max_missing_context_penalty"]
        0.5
    """
    opts = parse_options(ContextRelevanceOptions, options, kwargs)
    scale, penalties = opts.scale, opts.penalties
    context = context_resolver(opts.context, SCORER_ID)
    empty_context = partial(_empty_context_analysis, context)
    keyed = {"context": opts.context}
    return judge_scorer(
        SCORER_ID,
        opts,
        version=VERSION,
        description=DESCRIPTION,
        instructions=INSTRUCTIONS,
        options={"scale": scale, "context": opts.context, "penalties": penalties.model_dump()},
        analyze=JudgePrompt(
            prompt=partial(_relevance_prompt, context), output_model=ContextEvaluations,
            check=one_per_passage(context, "evaluations"), shortcut=empty_context,
        ),
        generate_score=partial(_penalised_relevance, penalties, scale),
        generate_reason=JudgePrompt(
            prompt=partial(_relevance_reason_prompt, context),
            shortcut=shortcut_reason(empty_context, _no_context_reason),
        ),
        step_params={"analyze": keyed, "generate_reason": keyed,
                     "generate_score": {"scale": scale, "penalties": penalties.model_dump()}},
    )
