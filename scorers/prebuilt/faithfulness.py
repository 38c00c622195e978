"""Faithfulness (LLM judge), SCORERS.md 1.1: how much of what the output asserts the context supports.

preprocess lists the output's claims (after resolving the context, tool results included: _passages.py),
analyze gives each a verdict against the context (yes / no / unsure),
generate_score is ``round_half_up(n_yes / n_verdicts * scale)``, 0 with no verdicts. Only ``yes`` counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field

from evalduck.scorers._scorer import Scorer
from evalduck.scorers.prebuilt._claims import ClaimsJudge, claims_scorer
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._judged import ContextJudgeOptions, OneOf
from evalduck.scorers.prebuilt._options import parse_options

__all__ = ("SCORER_ID", "VERSION", "FaithfulnessVerdict", "FaithfulnessVerdicts", "create_faithfulness_scorer")

SCORER_ID = "faithfulness-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "Share of the output's claims that its context supports (LLM judge)"


class FaithfulnessVerdict(BaseModel):  # noqa: D101 - a docstring would enter the JSON schema the judge is sent
    verdict: Annotated[str, OneOf("yes", "no", "unsure")] = Field(
        description="'yes' (the context states or clearly implies the claim), 'no' (the context contradicts "
        "it) or 'unsure' (the context does not say)."
    )
    reason: str = Field(description="One short sentence justifying the verdict.")


class FaithfulnessVerdicts(BaseModel):
    """analyze output: one verdict per claim, in the claims' order."""

    verdicts: list[FaithfulnessVerdict] = Field(description="Exactly one verdict per claim, in the same order.")


# analyze's rubric: three verdicts, so that what the context does not cover ("unsure") is told apart from
# what it contradicts ("no"); only "yes" counts as faithful, and speculation is never backed.
RUBRIC = """\
For each claim below, decide whether the context supports it:
- "yes": the context states the claim or clearly implies it;
- "no": the context contradicts the claim;
- "unsure": the context does not say either way. Speculative claims (what may, might or could be) are
  "unsure"."""

SPEC = ClaimsJudge(
    scorer_id=SCORER_ID,
    version=VERSION,
    description=DESCRIPTION,
    instructions="""\
You check texts against the context they were written from. You judge each claim only by what the given
context states or clearly implies, never by your own knowledge. Follow the task's instructions exactly and
reply in the format it asks for.""",
    verdicts_model=FaithfulnessVerdicts,
    rubric=RUBRIC,
    reply_shape='{"verdicts": [{"verdict": "yes" | "no" | "unsure", "reason": "..."}, ...]}',
    no_context_verdict=lambda claim: {"verdict": "unsure", "reason": "No context was given."},
    counted="yes",
    metric="faithfulness (the share of claims the context supports; higher is better)",
    tool_results_fallback=True,
    higher_is_better=True,
)


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION,
          needs_judge=True, reads=("output", "context (else option, else tool results)"))
def create_faithfulness_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """How much of what the output asserts its context supports, by an LLM judge.

    Its context follows SCORERS.md 0.1's context resolution (the rule: ``scorers/prebuilt/_passages.py``),
    the output's tool results included.

    Args:
        options: a mapping of the options below (snake_case or Mastra's camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        model: litellm model string; default $EVALDUCK_JUDGE_MODEL, a ConfigError if neither is set.
        context: passages for runs that give none: a non-empty string or list of strings.
        scale: the score's maximum, > 0 (default 1.0).
        temperature, timeout, api_base, max_tokens, retries, extra, judge: judge settings (JudgeSettings).

    Example:
        >>> create_faithfulness_scorer(model="openai/gpt-4o-mini", context="Paris is in France.").options["context"]
        ['Paris is in France.']
    """
    return claims_scorer(SPEC, parse_options(ContextJudgeOptions, options, kwargs))
