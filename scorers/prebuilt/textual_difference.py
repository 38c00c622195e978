"""Textual difference (code), SPEC 3.3: rapidfuzz similarity of the output with the ground truth (else
the input), discounted by the length difference: ``score = ratio * (1 - lengthDiff) * scale``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rapidfuzz.distance import Indel, Levenshtein

from evalduck.scorers._scorer import Scorer
from evalduck.scorers.prebuilt._code import analyze_then_score
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._options import ScaleOptions, parse_options
from evalduck.scorers.prebuilt._text import answer, reference_or_input

__all__ = ("SCORER_ID", "VERSION", "create_textual_difference_scorer", "text_difference", "difference_score")

SCORER_ID = "textual-difference-scorer"
VERSION = "2"  # 2: `changes` counts the opcodes from the reference to the output
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = (
    "Character similarity of the output to the ground truth (else the input), times the length match: "
    "wording, not meaning"
)


class TextualDifferenceOptions(ScaleOptions):
    """Only `scale`."""


def text_difference(output: str, reference: str) -> dict[str, float | int]:
    """The four measures: ratio (Indel normalized similarity; 1 for two empty texts), changes (the non-equal
    Levenshtein opcodes that turn the reference into the output, as Mastra counts them; the other direction's
    count differs on some pairs), lengthDiff (|len output - len reference| / max len; 0 for two empty texts),
    confidence (1 - lengthDiff)."""
    longest = max(len(output), len(reference))
    ratio = 1.0 if longest == 0 else float(Indel.normalized_similarity(output, reference))
    changes = sum(1 for op in Levenshtein.opcodes(reference, output) if op.tag != "equal")
    length_diff = 0.0 if longest == 0 else abs(len(output) - len(reference)) / longest
    return {"ratio": ratio, "changes": changes, "lengthDiff": length_diff, "confidence": 1 - length_diff}


def difference_score(analysis: Mapping[str, float | int], scale: float) -> float:
    """``ratio * confidence * scale``."""
    return float(analysis["ratio"]) * float(analysis["confidence"]) * scale


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION, needs_judge=False, reads=("output", "ground truth (else input)"))
def create_textual_difference_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """How close the output's text is to the ground truth (else the input); identical texts score ``scale``.

    Args:
        options: a mapping with ``scale``.
        **kwargs: ``scale`` as a keyword, which wins over ``options``.
        scale: the score's maximum, > 0 (default 1.0).

    Example:
        >>> create_textual_difference_scorer().run(input="q", output="Paris", ground_truth="Paris").score
        1.0
    """
    scale = parse_options(TextualDifferenceOptions, options, kwargs).scale

    return analyze_then_score(
        SCORER_ID, VERSION, DESCRIPTION,
        analyze=(lambda run: text_difference(answer(run), reference_or_input(run, SCORER_ID)), {}),
        score=(lambda analysis: difference_score(analysis, scale), {"scale": scale}),
        options={"scale": scale},
    )
