"""Tone consistency (code), SPEC 3.2: VADER compound sentiment, compared or checked for stability.

Comparison mode (output and reference both non-empty; reference = reference_tone, else ground truth,
else input): ``score = (1 - |response - reference| / 2) * scale``. Stability mode (otherwise, on the
non-empty text, output preferred): ``score = (1 - population variance of sentence compounds) * scale``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from evalduck.scorers._context import ScorerInput
from evalduck.scorers._messages import input_text, plain_text, split_sentences
from evalduck.scorers._scorer import Scorer
from evalduck.scorers.prebuilt._code import analyze_then_score
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._options import ScaleOptions, parse_options
from evalduck.scorers.prebuilt._text import answer

__all__ = ("SCORER_ID", "VERSION", "compound", "create_tone_scorer", "tone_analysis", "tone_score")

SCORER_ID = "tone-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = (
    "Sentiment match of the output with its reference (reference_tone, else ground truth, else input), or "
    "sentiment evenness: tone, not quality"
)


class ToneOptions(ScaleOptions):
    reference_tone: str | None = None


@lru_cache(maxsize=1)
def _analyzer() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def compound(text: str) -> float:
    """VADER's compound sentiment of ``text``, in [-1, 1]."""
    return float(_analyzer().polarity_scores(text)["compound"])


def _reference(run: ScorerInput, reference_tone: str | None) -> str:
    if reference_tone is not None:
        return reference_tone
    if run.ground_truth is not None:
        return plain_text(run.ground_truth)
    return input_text(run.input)


def tone_analysis(response: str, reference: str) -> dict[str, float]:
    """The analyze step result for a response and its reference text (either may be empty)."""
    if response.strip() and reference.strip():
        r, ref = compound(response), compound(reference)
        return {"responseSentiment": r, "referenceSentiment": ref, "difference": abs(r - ref)}
    text = response if response.strip() else reference
    values = [compound(s) for s in split_sentences(text)]
    if not values:
        return {"avgSentiment": 0.0, "sentimentVariance": 0.0}
    return {"avgSentiment": statistics.fmean(values), "sentimentVariance": statistics.pvariance(values)}


def tone_score(analysis: Mapping[str, float], scale: float) -> float:
    """``(1 - difference / 2) * scale`` in comparison mode, ``(1 - variance) * scale`` in stability mode."""
    if "difference" in analysis:
        raw = 1 - analysis["difference"] / 2
    else:
        raw = 1 - analysis["sentimentVariance"] / 1
    return min(1.0, max(0.0, raw)) * scale


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION,
          needs_judge=False, reads=("output", "reference_tone (else ground truth, else input)"))
def create_tone_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """Tone consistency of the output with a reference, or tone stability within the output.

    Args:
        options: a mapping of the options below (snake_case or camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        scale: the score's maximum, > 0 (default 1.0).
        reference_tone: a fixed text whose tone the output should match (default: the ground truth, else
            the input).

    Example:
        >>> create_tone_scorer().run(input="Thanks, that is great!", output="Glad it helped, great!").score > 0.9
        True
    """
    opts = parse_options(ToneOptions, options, kwargs)
    scale, reference_tone = opts.scale, opts.reference_tone

    return analyze_then_score(
        SCORER_ID, VERSION, DESCRIPTION,
        analyze=(lambda run: tone_analysis(answer(run), _reference(run, reference_tone)), {"reference_tone": reference_tone}),
        score=(lambda analysis: tone_score(analysis, scale), {"scale": scale}),
        options={"scale": scale, "reference_tone": reference_tone},
    )
