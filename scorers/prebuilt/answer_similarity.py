"""Answer similarity (LLM judge), SCORERS.md 1.3: how well the output restates the ground truth.

preprocess splits both texts into atomic facts (units), analyze matches each ground-truth unit with the
output (exact, semantic, partial or missing) and lists extra output units and contradictions,
generate_score weighs the matches and subtracts the penalties (the formula in ``similarity_score``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field, StrictBool, field_validator

from evalduck.scorers._context import StepContext
from evalduck.scorers._errors import NotScorable
from evalduck.scorers._messages import plain_text
from evalduck.scorers._scorer import Scorer
from evalduck.scorers._step import JudgePrompt
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._judged import (
    OneOf,
    block,
    json_block,
    judge_scorer,
    normalised,
    one_per,
    reason_prompt,
    scaled,
    shortcut_reason,
    step_result,
)
from evalduck.scorers.prebuilt._options import JudgeOptions, ScaleOptions, parse_options
from evalduck.scorers.prebuilt._text import answer

__all__ = (
    "SCORER_ID",
    "VERSION",
    "AnswerMatches",
    "AnswerUnits",
    "create_answer_similarity_scorer",
    "similarity_score",
)

SCORER_ID = "answer-similarity-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = (
    "How well the output restates the ground truth's facts (LLM judge; missing, contradicted and extra facts "
    "cost)"
)
MATCH_TYPES = ("exact", "semantic", "partial", "missing")

INSTRUCTIONS = """\
You compare an answer with a reference answer (the ground truth), fact by fact. You judge whether the
answer says what the reference says, not whether either is true. Follow the task's instructions exactly
and reply in the format it asks for."""


class AnswerUnits(BaseModel):
    """preprocess output: each text split into atomic facts."""

    outputUnits: list[str] = Field(description="The answer's atomic facts, in order.")
    groundTruthUnits: list[str] = Field(description="The ground truth's atomic facts, in order.")


class UnitMatch(BaseModel):
    groundTruthUnit: str = Field(description="The ground-truth unit, as listed.")
    outputUnit: str | None = Field(description="The output unit that matches it, or null when missing.")
    matchType: Annotated[str, OneOf(*MATCH_TYPES)] = Field(
        description="'exact' (same fact, same wording), 'semantic' (same fact, other words), 'partial' (part "
        "of the fact) or 'missing' (not in the output)."
    )
    explanation: str = Field(description="One short sentence justifying the match type.")


class Contradiction(BaseModel):
    outputUnit: str = Field(description="The output unit that contradicts the ground truth.")
    groundTruthUnit: str = Field(description="The ground-truth unit it contradicts.")
    explanation: str = Field(description="One short sentence on the contradiction.")


class AnswerMatches(BaseModel):
    """analyze output: one match per ground-truth unit, the output's extra units, the contradictions."""

    matches: list[UnitMatch] = Field(description="Exactly one match per ground-truth unit, in the same order.")
    extraInOutput: list[str] = Field(description="Output units that match no ground-truth unit.")
    contradictions: list[Contradiction] = Field(description="Output units that contradict a ground-truth unit.")


class Weights(ScaleOptions):
    semantic_threshold: float = 0.8
    exact_match_bonus: float = 0.2
    missing_penalty: float = 0.15
    contradiction_penalty: float = 1.0
    extra_info_penalty: float = 0.05

    @field_validator("semantic_threshold", "exact_match_bonus", "missing_penalty", "contradiction_penalty",
                     "extra_info_penalty")
    @classmethod
    def _unit(cls, value: float, info: Any) -> float:
        if not 0 <= value <= 1:
            raise ValueError(f"`{info.field_name}` must be between 0 and 1, got {value!r}")
        return value


class AnswerSimilarityOptions(Weights, JudgeOptions):
    require_ground_truth: StrictBool = True


def similarity_score(analysis: Mapping[str, Any] | None, w: Weights) -> float:
    """SCORERS.md 1.3's formula over analyze's result; 0 with no matches (no ground truth included)."""
    matches = list((analysis or {}).get("matches") or [])
    if not matches:
        return 0.0
    value = {
        "exact": 1 + w.exact_match_bonus,
        "semantic": w.semantic_threshold,
        "partial": w.semantic_threshold * 0.5,
        "missing": -w.missing_penalty,
    }
    s = 0.0
    for match in matches:
        s += value[normalised(match["matchType"])]
    s = s / (len(matches) * (1 + w.exact_match_bonus))
    s -= w.contradiction_penalty * len((analysis or {}).get("contradictions") or [])
    s -= min(w.extra_info_penalty * len((analysis or {}).get("extraInOutput") or []), 0.2)
    return scaled(min(1, max(0, s)), w.scale)


def _ground_truth(ctx: StepContext) -> str | None:
    return None if ctx.run.ground_truth is None else plain_text(ctx.run.ground_truth)


def _units(ctx: StepContext, key: str) -> list[str]:
    return step_result(ctx, "preprocess", key)


def _preprocess_prompt(ctx: StepContext) -> str:
    """Asks for atomic facts on both sides, so the comparison is fact by fact rather than a whole-text
    impression (a long answer with the one key fact wrong must not look similar)."""
    return f"""\
Split each of the two texts below into atomic facts (units): short, self-contained statements that each
carry one piece of information. Keep each text's own wording where you can, in its order. Split compound
sentences; leave out filler that carries no information. A text with no information gives an empty list.

{block("output", answer(ctx.run))}

{block("ground_truth", _ground_truth(ctx) or "")}

Reply with a JSON object {{"outputUnits": [...], "groundTruthUnits": [...]}}."""


def _analyze_prompt(ctx: StepContext) -> str:
    """Asks for one match per ground-truth unit plus the extras and contradictions the penalties need."""
    truth = _units(ctx, "groundTruthUnits")
    return f"""\
For each ground-truth unit below, in order, find how the output states it:
- "exact": an output unit states the same fact in the same words (or nearly so);
- "semantic": an output unit states the same fact in other words;
- "partial": an output unit states part of the fact, or states it less precisely;
- "missing": no output unit states it (then `outputUnit` is null).
Give exactly {len(truth)} match(es), one per ground-truth unit, in the same order. Then list in
`extraInOutput` the output units that match no ground-truth unit, and in `contradictions` each output unit
that contradicts a ground-truth unit (a different date, number, name or claim about the same thing).

{json_block("ground_truth_units", truth)}

{json_block("output_units", _units(ctx, "outputUnits"))}

Reply with a JSON object {{"matches": [{{"groundTruthUnit": "...", "outputUnit": "..." | null, "matchType":
"exact" | "semantic" | "partial" | "missing", "explanation": "..."}}, ...], "extraInOutput": [...],
"contradictions": [{{"outputUnit": "...", "groundTruthUnit": "...", "explanation": "..."}}, ...]}}."""


def _reason_prompt(ctx: StepContext) -> str:
    """Shows both texts and the match analysis, so the explanation names what was missing or contradicted."""
    return reason_prompt(
        "answer similarity (how well the output restates the ground truth; higher is better)",
        "The output below received the similarity score given here against the ground truth. Explain why, "
        "citing missing, partial and contradicted facts.",
        block("output", answer(ctx.run)),
        block("ground_truth", _ground_truth(ctx) or ""),
        json_block("analysis", ctx.results.get("analyze") or {}),
        score=ctx.score,
    )


def _no_truth_units(ctx: StepContext) -> Any:
    if _units(ctx, "groundTruthUnits"):
        return None
    return {"matches": [], "extraInOutput": [], "contradictions": []}


def _nothing_to_match(ctx: StepContext) -> str:
    why = "no ground truth was given" if ctx.run.ground_truth is None else "the ground truth states no facts"
    return f"The score is {ctx.score}: {why}, so there is nothing for the output to match."


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION, needs_judge=True, reads=("output", "ground truth"))
def create_answer_similarity_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """How well the output restates the ground truth, fact by fact, by an LLM judge.

    Args:
        options: a mapping of the options below (snake_case or Mastra's camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        model: litellm model string; default $EVALDUCK_JUDGE_MODEL, a ConfigError if neither is set.
        require_ground_truth: without a ground truth, NotScorable (True, the default) or score 0 (False).
        semantic_threshold, exact_match_bonus, missing_penalty, contradiction_penalty, extra_info_penalty:
            the formula's weights, each in [0, 1] (defaults 0.8, 0.2, 0.15, 1.0, 0.05).
        scale: the score's maximum, > 0 (default 1.0).
        temperature, timeout, api_base, max_tokens, retries, extra, judge: judge settings (JudgeSettings).

    Example:
        >>> create_answer_similarity_scorer(model="openai/gpt-4o-mini", requireGroundTruth=False).options["require_ground_truth"]
        False
    """
    opts = parse_options(AnswerSimilarityOptions, options, kwargs)
    weights = Weights.model_validate(opts.model_dump(include=set(Weights.model_fields)))
    require = opts.require_ground_truth

    def units(ctx: StepContext) -> Any:
        truth = _ground_truth(ctx)
        if truth is None and require:
            raise NotScorable(
                f"{SCORER_ID} needs `ground_truth` (a dataset row's \"groundTruth\"): no ground truth was given; "
                "give one, or create the scorer with require_ground_truth=False to score such runs 0"
            )
        return {"outputUnits": [], "groundTruthUnits": []} if truth is None or not truth.strip() else None

    def generate_score(ctx: StepContext) -> float:
        """0 without a ground truth whatever the earlier steps returned (SCORERS.md 1.3): a run that gets
        here with none has require_ground_truth=False, and analyze's result is not about this run then."""
        if ctx.run.ground_truth is None:
            return 0.0
        return similarity_score(ctx.results.get("analyze"), weights)

    return judge_scorer(
        SCORER_ID,
        opts,
        version=VERSION,
        description=DESCRIPTION,
        instructions=INSTRUCTIONS,
        options={**weights.model_dump(), "require_ground_truth": require},
        preprocess=JudgePrompt(prompt=_preprocess_prompt, output_model=AnswerUnits, shortcut=units),
        analyze=JudgePrompt(
            prompt=_analyze_prompt, output_model=AnswerMatches,
            check=one_per(lambda ctx: _units(ctx, "groundTruthUnits"), "matches", "ground-truth unit"),
            shortcut=_no_truth_units,
        ),
        generate_score=generate_score,
        generate_reason=JudgePrompt(
            prompt=_reason_prompt,
            shortcut=shortcut_reason(_no_truth_units, _nothing_to_match),
        ),
        step_params={"preprocess": {"require_ground_truth": require}, "generate_score": weights.model_dump()},
    )
