"""What faithfulness and hallucination share (SCORERS.md 1.1 and 1.2): the context is resolved first, the
output is split into self-contained claims, analyze gives each claim a verdict against the context, and the
score is the share of one verdict. ``ClaimsJudge`` holds what differs between the two."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel, Field

from evalduck.scorers._context import StepContext
from evalduck.scorers._scorer import Scorer
from evalduck.scorers._step import JudgePrompt
from evalduck.scorers.prebuilt._judged import (
    block,
    context_block,
    context_resolver,
    json_block,
    judge_scorer,
    one_per,
    reason_prompt,
    share_of,
    shortcut_reason,
    step_result,
)
from evalduck.scorers.prebuilt._text import answer

__all__ = ("Claims", "ClaimsJudge", "claims", "claims_scorer", "claims_step")


class Claims(BaseModel):
    """preprocess output: the output's claims."""

    claims: list[str] = Field(description="Every assertion of the text, each self-contained, in order.")


def claims(ctx: StepContext) -> list[str]:
    """The claims of the preprocess step ([] before it ran or when there were none)."""
    return step_result(ctx, "preprocess", "claims")


def _claims_prompt(ctx: StepContext) -> str:
    """Asks for every assertion, speculative ones included, each standing on its own, so that analyze can
    judge each claim against the context without the rest of the text."""
    return f"""\
List every claim the text below makes: each assertion, factual or speculative ("it may rain tomorrow" is a
claim). Split compound sentences into separate claims, and make each claim self-contained (replace
pronouns with what they refer to). Questions and commands are not claims. Keep the text's order; add
nothing. A text with no claims gives an empty list.

{block("output", answer(ctx.run))}

Reply with a JSON object {{"claims": [...]}}."""


def claims_step(context: Callable[[StepContext], list[str]]) -> JudgePrompt:
    """preprocess: ``context(ctx)`` first (it raises NotScorable without one), then the claims; a blank
    output has none (no request)."""

    def shortcut(ctx: StepContext) -> Any:
        context(ctx)
        return {"claims": []} if not answer(ctx.run).strip() else None

    return JudgePrompt(prompt=_claims_prompt, output_model=Claims, shortcut=shortcut)



@dataclass(frozen=True, kw_only=True)
class ClaimsJudge:
    """What tells faithfulness and hallucination apart: their verdicts, rubric, empty-context rule, direction."""

    scorer_id: str
    version: str
    description: str
    instructions: str
    verdicts_model: type[BaseModel]
    rubric: str  # analyze's instructions: what each verdict means
    reply_shape: str  # the JSON analyze answers with, as shown to the judge
    no_context_verdict: Callable[[str], dict[str, Any]]  # a claim's verdict when the context is empty
    counted: str  # the verdict whose share is the score
    metric: str  # the score's name, meaning and direction, for generate_reason
    tool_results_fallback: bool
    higher_is_better: bool


def _verdicts_prompt(spec: ClaimsJudge, context: Callable[[StepContext], list[str]], ctx: StepContext) -> str:
    """Analyze's prompt. Asks for one verdict per claim against the numbered passages only, with the scorer's
    rubric, so outside knowledge never decides whether the context backs a claim."""
    items = claims(ctx)
    return f"""\
{spec.rubric}
Use only the context, never outside knowledge. Give exactly {len(items)} verdict(s), one per claim, in the
same order, each with a one-sentence reason.

{context_block(context(ctx))}

{json_block("claims", items)}

Reply with a JSON object {spec.reply_shape}."""


def _verdicts_shortcut(spec: ClaimsJudge, context: Callable[[StepContext], list[str]], ctx: StepContext) -> Any:
    """Analyze without a request: no verdicts for no claims, ``spec.no_context_verdict`` for each claim
    when the context is empty (nothing to judge against); None to ask the judge."""
    items = claims(ctx)
    if not items:
        return {"verdicts": []}
    if not context(ctx):
        return {"verdicts": [spec.no_context_verdict(c) for c in items]}
    return None


def _verdicts_reason_prompt(spec: ClaimsJudge, context: Callable[[StepContext], list[str]], ctx: StepContext) -> str:
    """generate_reason's prompt. Shows the context and each claim with its verdict, so the explanation cites them."""
    pairs = [{"claim": c, **v} for c, v in zip(claims(ctx), step_result(ctx, "analyze", "verdicts"), strict=True)]
    return reason_prompt(
        spec.metric,
        "The output below received the score given here against its context. Explain why, citing the "
        "claims behind the score.",
        context_block(context(ctx)),
        block("output", answer(ctx.run)),
        json_block("verdicts", pairs),
        score=ctx.score,
    )


def _shortcut_reason_sentence(ctx: StepContext) -> str:
    """generate_reason's fixed sentence when analyze was a shortcut: no claims, or an empty context."""
    why = "the output makes no claims" if not claims(ctx) else "the context is empty, so it backs none of the claims"
    return f"The score is {ctx.score}: {why}."


def _verdict_share(spec: ClaimsJudge, scale: float, ctx: StepContext) -> float:
    """generate_score: the share of analyze's verdicts that are ``spec.counted``, scaled."""
    return share_of([v["verdict"] for v in step_result(ctx, "analyze", "verdicts")], spec.counted, scale)


def claims_scorer(spec: ClaimsJudge, opts: Any) -> Scorer:
    """The scorer: claims (context first), one verdict per claim, the share of ``spec.counted``, a reason.

    ``opts`` are parsed options with ``scale``, ``context`` and the judge settings."""
    scale = opts.scale
    context = context_resolver(opts.context, spec.scorer_id, tool_results_fallback=spec.tool_results_fallback)
    shortcut = partial(_verdicts_shortcut, spec, context)
    keyed = {"context": opts.context}
    return judge_scorer(
        spec.scorer_id,
        opts,
        version=spec.version,
        higher_is_better=spec.higher_is_better,
        description=spec.description,
        instructions=spec.instructions,
        options={"scale": scale, "context": opts.context},
        preprocess=claims_step(context),
        analyze=JudgePrompt(
            prompt=partial(_verdicts_prompt, spec, context), output_model=spec.verdicts_model,
            check=one_per(claims, "verdicts", "claim"), shortcut=shortcut,
        ),
        generate_score=partial(_verdict_share, spec, scale),
        generate_reason=JudgePrompt(
            prompt=partial(_verdicts_reason_prompt, spec, context),
            shortcut=shortcut_reason(shortcut, _shortcut_reason_sentence),
        ),
        step_params={"preprocess": keyed, "analyze": keyed, "generate_reason": keyed, "generate_score": {"scale": scale}},
    )
