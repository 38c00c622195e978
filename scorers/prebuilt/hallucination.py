"""Hallucination (LLM judge), SCORERS.md 1.2: the share of the output's claims the context does not back
(lower is better).

preprocess lists the output's claims (after resolving the context, without tool results: _passages.py),
analyze marks each hallucinated (``yes``) or supported (``no``), generate_score is
``round_half_up(n_yes / n_verdicts * scale)``, 0 with no verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from evalduck.scorers._scorer import Scorer
from evalduck.scorers.prebuilt._claims import ClaimsJudge, claims_scorer
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._judged import ContextJudgeOptions, YesNo
from evalduck.scorers.prebuilt._options import parse_options

__all__ = ("SCORER_ID", "VERSION", "HallucinationVerdict", "HallucinationVerdicts", "create_hallucination_scorer")

SCORER_ID = "hallucination-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "Share of the output's claims that its context does not back (LLM judge)"


class HallucinationVerdict(BaseModel):  # noqa: D101 - a docstring would enter the JSON schema the judge is sent
    statement: str = Field(description="The claim, repeated.")
    verdict: YesNo = Field(description="'yes' if the claim is hallucinated, 'no' if the context supports it.")
    reason: str = Field(description="One short sentence justifying the verdict.")


class HallucinationVerdicts(BaseModel):
    """analyze output: one verdict per claim, in the claims' order."""

    verdicts: list[HallucinationVerdict] = Field(description="Exactly one verdict per claim, in the same order.")


# analyze's rubric: unlike faithfulness, what the context does not back counts against the output as much
# as what it contradicts; only fair approximations and omissions are forgiven.
RUBRIC = """\
For each claim below, decide whether it is hallucinated:
- "yes": the claim contradicts the context, or asserts something the context does not support. Speculation
  about facts the context does not mention, and subjective praise the context does not back, are "yes".
- "no": the context supports the claim. A less precise date or figure, a fair approximation, or leaving
  details out is fine ("no")."""

SPEC = ClaimsJudge(
    scorer_id=SCORER_ID,
    version=VERSION,
    description=DESCRIPTION,
    instructions="""\
You check texts for hallucinations: claims that the context they were written from does not back. You
judge each claim only by the given context, never by your own knowledge. Follow the task's instructions
exactly and reply in the format it asks for.""",
    verdicts_model=HallucinationVerdicts,
    rubric=RUBRIC,
    reply_shape='{"verdicts": [{"statement": "<the claim>", "verdict": "yes" | "no", "reason": "..."}, ...]}',
    no_context_verdict=lambda claim: {"statement": claim, "verdict": "yes", "reason": "No context supports it."},
    counted="yes",
    metric="hallucination (the share of claims the context does not back; lower is better)",
    tool_results_fallback=False,
    higher_is_better=False,
)


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION,
          needs_judge=True, higher_is_better=False, reads=("output", "context (else option)"))
def create_hallucination_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """The share of the output's claims that its context does not back, by an LLM judge (lower is better).

    Its context follows SCORERS.md 0.1's context resolution (the rule: ``scorers/prebuilt/_passages.py``).
    An empty context backs nothing: every claim is hallucinated.

    Args:
        options: a mapping of the options below (snake_case or Mastra's camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        model: litellm model string; default $EVALDUCK_JUDGE_MODEL, a ConfigError if neither is set.
        context: passages for runs that give none: a non-empty string or list of strings.
        scale: the score's maximum, > 0 (default 1.0).
        temperature, timeout, api_base, max_tokens, retries, extra, judge: judge settings (JudgeSettings).

    Example:
        >>> create_hallucination_scorer(model="openai/gpt-4o-mini").higher_is_better
        False
    """
    return claims_scorer(SPEC, parse_options(ContextJudgeOptions, options, kwargs))
