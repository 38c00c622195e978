"""Context precision (LLM judge), SCORERS.md 1.4: whether the useful passages were retrieved first.

analyze (after resolving the context: _passages.py) marks each passage useful (``yes``)
for producing the output as an answer to the input; generate_score is their mean average precision
(``average_precision``), scaled and rounded half up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from pydantic import BaseModel, Field, StrictInt

from evalduck.scorers._context import StepContext
from evalduck.scorers._scorer import Scorer
from evalduck.scorers._step import JudgePrompt
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._judged import (
    ContextJudgeOptions,
    YesNo,
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
    step_result,
)
from evalduck.scorers.prebuilt._options import parse_options
from evalduck.scorers.prebuilt._text import answer, question

__all__ = ("SCORER_ID", "VERSION", "PassageVerdicts", "average_precision", "create_context_precision_scorer")

SCORER_ID = "context-precision-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "Whether the passages useful for the output were retrieved first (LLM judge; mean average precision)"

INSTRUCTIONS = """\
You assess retrieval for question answering: which retrieved passages were useful for the answer that was
given. Follow the task's instructions exactly and reply in the format it asks for."""


class PassageVerdict(BaseModel):
    context_index: StrictInt = Field(description="The passage's 0-based position in the context.")
    verdict: YesNo = Field(description="'yes' if the passage helps produce the output as an answer to the input.")
    reason: str = Field(description="One short sentence justifying the verdict.")


class PassageVerdicts(BaseModel):
    """analyze output: one verdict per passage, with its 0-based index."""

    verdicts: list[PassageVerdict] = Field(description="Exactly one verdict per passage, indices 0..n-1.")


def average_precision(verdicts: Sequence[Mapping[str, Any]]) -> float:
    """Mean average precision of the ``yes`` verdicts in ``context_index`` order; 0 with none."""
    relevant = [normalised(v["verdict"]) == "yes" for v in sorted(verdicts, key=lambda v: v["context_index"])]
    total = sum(relevant)
    if not total:
        return 0.0
    hits, precision = 0, 0.0
    for k, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            precision += hits / k
    return precision / total


def _usefulness_prompt(context: Callable[[StepContext], list[str]], ctx: StepContext) -> str:
    """Analyze's prompt. Asks whether each passage helps produce the given output (as Mastra does, not the
    ground truth as DeepEval does), so the score says whether retrieval ranked what the answer used first."""
    passages = context(ctx)
    output = answer(ctx.run)
    target = (
        "helps produce the output below as an answer to the input"
        if output.strip() else "is useful for answering the input (the output is empty)"
    )
    return f"""\
For each passage of the context below, decide whether it {target}:
- "yes": the passage gives information the answer uses or needs;
- "no": the passage is irrelevant to it, or only repeats what another passage gives without being used.
Give exactly {len(passages)} verdict(s), one per passage, each with its 0-based `context_index` (0 to
{len(passages) - 1}) and a one-sentence reason.

{block("input", question(ctx.run, SCORER_ID))}

{block("output", output)}

{context_block(passages)}

Reply with a JSON object {{"verdicts": [{{"context_index": 0, "verdict": "yes" | "no", "reason": "..."}}, ...]}}."""


def _no_verdicts_without_context(context: Callable[[StepContext], list[str]], ctx: StepContext) -> Any:
    """Analyze without a request: no verdicts for an empty context; None to ask the judge."""
    return {"verdicts": []} if not context(ctx) else None


def _precision_reason_prompt(context: Callable[[StepContext], list[str]], ctx: StepContext) -> str:
    """generate_reason's prompt. Shows the passages and their verdicts, so the explanation says where the
    useful ones ranked."""
    return reason_prompt(
        "context precision (whether the useful passages came first; higher is better)",
        "The retrieved context below received the precision score given here for the output. Explain "
        "why, naming the useful passages and where they were ranked.",
        block("input", question(ctx.run, SCORER_ID)),
        context_block(context(ctx)),
        json_block("verdicts", step_result(ctx, "analyze", "verdicts")),
        score=ctx.score,
    )


def _empty_context_reason(ctx: StepContext) -> str:
    """generate_reason's fixed sentence for an empty context (nothing was judged)."""
    return f"The score is {ctx.score}: the context is empty, so no passage was useful."


def _precision_score(scale: float, ctx: StepContext) -> float:
    """generate_score: the verdicts' mean average precision, scaled."""
    return scaled(average_precision(step_result(ctx, "analyze", "verdicts")), scale)


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION,
          needs_judge=True, reads=("input", "output", "context (else option)"))
def create_context_precision_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """Whether the passages useful for the output were retrieved first (mean average precision), by an LLM judge.

    Its context follows SCORERS.md 0.1's context resolution (the rule: ``scorers/prebuilt/_passages.py``).

    Args:
        options: a mapping of the options below (snake_case or Mastra's camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        model: litellm model string; default $EVALDUCK_JUDGE_MODEL, a ConfigError if neither is set.
        context: passages for runs that give none: a non-empty string or list of strings.
        scale: the score's maximum, > 0 (default 1.0).
        temperature, timeout, api_base, max_tokens, retries, extra, judge: judge settings (JudgeSettings).

    Example:
        >>> [s.name for s in create_context_precision_scorer(model="openai/gpt-4o-mini").steps]
        ['analyze', 'generate_score', 'generate_reason']
    """
    opts = parse_options(ContextJudgeOptions, options, kwargs)
    scale = opts.scale
    context = context_resolver(opts.context, SCORER_ID)
    empty_context = partial(_no_verdicts_without_context, context)
    keyed = {"context": opts.context}
    return judge_scorer(
        SCORER_ID,
        opts,
        version=VERSION,
        description=DESCRIPTION,
        instructions=INSTRUCTIONS,
        options={"scale": scale, "context": opts.context},
        analyze=JudgePrompt(
            prompt=partial(_usefulness_prompt, context), output_model=PassageVerdicts,
            check=one_per_passage(context, "verdicts"), shortcut=empty_context,
        ),
        generate_score=partial(_precision_score, scale),
        generate_reason=JudgePrompt(
            prompt=partial(_precision_reason_prompt, context),
            shortcut=shortcut_reason(empty_context, _empty_context_reason),
        ),
        step_params={"analyze": keyed, "generate_reason": keyed, "generate_score": {"scale": scale}},
    )
