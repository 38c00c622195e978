"""Content similarity (code), SCORERS.md 2.2: Sørensen-Dice over character bigrams of the reference and
the output, as Mastra's scorer computes it (``string-similarity``'s ``compareTwoStrings``)."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from pydantic import StrictBool

from evalduck.scorers._scorer import Scorer
from evalduck.scorers.prebuilt._code import code_scorer, on_reference_and_output
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._js_text import collapse_whitespace, delete_whitespace
from evalduck.scorers.prebuilt._options import OptionsModel, parse_options

__all__ = ("SCORER_ID", "VERSION", "create_content_similarity_scorer", "dice", "processed")

SCORER_ID = "content-similarity-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "Character-bigram similarity of the output to the ground truth (else the input): wording, not meaning"


class ContentSimilarityOptions(OptionsModel):
    ignore_case: StrictBool = True
    ignore_whitespace: StrictBool = True


def processed(text: str, *, ignore_case: bool, ignore_whitespace: bool) -> str:
    """The text as compared: lowercased, then whitespace runs made one space and the ends stripped."""
    if ignore_case:
        text = text.lower()
    if ignore_whitespace:
        text = collapse_whitespace(text)
    return text


def _units(first: str, second: str) -> tuple[Sequence[str], Sequence[str]] | tuple[Sequence[int], Sequence[int]]:
    """Both texts as their UTF-16 code units, as JavaScript indexes a string: the texts themselves when
    neither has a character outside the BMP (each character is then one unit), else both as numbers."""
    both = first + second
    if both.isascii() or max(both, default="") <= "\uffff":
        return first, second
    return tuple(array("H", t.encode("utf-16-le", "surrogatepass")) for t in (first, second))  # type: ignore[return-value]


def dice(first: str, second: str) -> float:
    """``compareTwoStrings``: whitespace deleted; equal texts 1; under 2 code units 0; else twice the
    bigrams the two share (as multisets) over the number of bigrams of both."""
    first, second = delete_whitespace(first), delete_whitespace(second)
    if first == second:
        return 1.0
    a, b = _units(first, second)
    if len(a) < 2 or len(b) < 2:
        return 0.0
    # Walking b's bigrams and taking each from a's multiset while any is left matches, for every bigram,
    # as many as the smaller of its two counts: the size of the multisets' intersection.
    in_a = Counter(pairwise(a))
    matches = sum(min(n, in_a.get(bigram, 0)) for bigram, n in Counter(pairwise(b)).items())
    return 2.0 * matches / (len(a) + len(b) - 2)


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION, needs_judge=False, reads=("output", "ground truth (else input)"))
def create_content_similarity_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """How similar the output's characters are to the ground truth's (else the input's first user message):
    Sørensen-Dice over character bigrams, whitespace ignored, 1 for identical texts.

    Args:
        options: a mapping of the options below (snake_case or camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        ignore_case: lowercase both texts first (default True).
        ignore_whitespace: collapse whitespace runs in the stored texts (default True; the score ignores
            whitespace either way).

    Example:
        >>> create_content_similarity_scorer().run(input="q", output="Hello  World", ground_truth="hello world").score
        1.0
    """
    opts = parse_options(ContentSimilarityOptions, options, kwargs)
    flags = {"ignore_case": opts.ignore_case, "ignore_whitespace": opts.ignore_whitespace}

    def preprocess(reference: str, output: str) -> dict[str, str]:
        return {"processedInput": processed(reference, **flags), "processedOutput": processed(output, **flags)}

    def generate_score(ctx: Any) -> float:
        texts = ctx.results["preprocess"]
        return dice(texts["processedInput"], texts["processedOutput"])

    return code_scorer(
        SCORER_ID, VERSION, DESCRIPTION,
        options=flags, preprocess=(on_reference_and_output(SCORER_ID, preprocess), flags), generate_score=(generate_score, {}),
    )
