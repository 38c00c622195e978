"""Completeness (code), SCORERS.md 2.1: the share of the reference's words, as lemmas, that the output
covers. Mastra picks nouns, verbs, topics and terms with the JS tagger ``compromise``; evalduck has no
tagger and lemmatises every word with ``simplemma`` (its English dictionary ships in the wheel)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache
from typing import Any

from evalduck.scorers._scorer import Scorer
from evalduck.scorers.prebuilt._code import code_scorer, on_reference_and_output
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._options import NoOptions, parse_options
from evalduck.scorers.prebuilt._versions import package_version

__all__ = ("SCORER_ID", "VERSION", "completeness_score", "covered", "create_completeness_scorer", "elements", "pieces")

SCORER_ID = "completeness-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "Share of the ground truth's (else the input's) words, as lemmas, that the output covers"
LEMMA_PACKAGE = "simplemma"

_COMBINING = re.compile("[\u0300-\u036f]")
_NOT_ALNUM = re.compile("[^a-z0-9]+")


def pieces(text: str) -> list[str]:
    """NFD, combining marks (U+0300-U+036F) deleted, lowercased, split on every run of characters other
    than a-z and 0-9 (so non-Latin scripts leave nothing, as in Mastra)."""
    text = _COMBINING.sub("", unicodedata.normalize("NFD", text)).lower()
    return _NOT_ALNUM.sub(" ", text).split()


@cache
def _lemmatizer() -> Callable[[str], str]:
    import simplemma  # imported on first use: `import evalduck.scorers` stays light

    return lambda token: simplemma.lemmatize(token, lang="en")


@lru_cache(maxsize=65536)  # the same words recur across items
def _token_elements(token: str) -> tuple[str, ...]:
    return tuple(pieces(_lemmatizer()(token)))


def elements(text: str) -> list[str]:
    """The pieces of each piece's lemma, in order, each once."""
    seen: dict[str, None] = {}
    for token in pieces(text):
        for element in _token_elements(token):
            seen.setdefault(element, None)
    return list(seen)


def covered(element: str, output_elements: Sequence[str]) -> bool:
    """Up to 3 characters: an equal output element; longer: the shorter of the two inside the longer, and
    over 60 % of its length."""
    if element in output_elements:
        return True
    if len(element) <= 3:
        return False
    for other in output_elements:
        shorter, longer = (other, element) if len(other) < len(element) else (element, other)
        if len(shorter) / len(longer) > 0.6 and shorter in longer:
            return True
    return False


def completeness_analysis(reference: str, output: str) -> dict[str, Any]:
    """The preprocess result: both texts' elements, the reference's missing ones (not exactly in the
    output's), and their counts."""
    ref, out = elements(reference), elements(output)
    present = set(out)
    return {
        "inputElements": ref,
        "outputElements": out,
        "missingElements": [e for e in ref if e not in present],
        "elementCounts": {"input": len(ref), "output": len(out)},
    }


def completeness_score(analysis: Mapping[str, Any]) -> float:
    """``#covered / n_in``; no reference elements: 1 when the output has none either, else 0."""
    ref, out = analysis["inputElements"], analysis["outputElements"]
    if not ref:
        return 1.0 if not out else 0.0
    return sum(1 for e in ref if covered(e, out)) / len(ref)


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION, needs_judge=False, reads=("output", "ground truth (else input)"))
def create_completeness_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """How many of the ground truth's (else the input's) words, as lemmas, the output covers. No options.

    Example:
        >>> create_completeness_scorer().run(input="q", output="The cats are sleeping.", ground_truth="A cat is sleeping").score
        0.75
    """
    parse_options(NoOptions, options, kwargs)
    return code_scorer(
        SCORER_ID, VERSION, DESCRIPTION,
        preprocess=(on_reference_and_output(SCORER_ID, completeness_analysis), {"lemmatizer": package_version(LEMMA_PACKAGE)}),
        generate_score=(lambda ctx: completeness_score(ctx.results["preprocess"]), {}),
    )
