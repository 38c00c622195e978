"""Keyword coverage (code), SCORERS.md 2.3: the share of the reference's keywords the output contains.

Mastra's keywords come from the npm ``keyword-extractor`` (its English stop list is SMART's); its
tokenizer is reproduced below, with the stop words of the PyPI ``stop-words`` package (data in the wheel)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from evalduck.scorers._scorer import Scorer
from evalduck.scorers.prebuilt._code import code_scorer, on_reference_and_output
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._js_text import split_on_whitespace, trim
from evalduck.scorers.prebuilt._options import NoOptions, parse_options
from evalduck.scorers.prebuilt._versions import package_version

__all__ = ("SCORER_ID", "VERSION", "coverage_analysis", "coverage_score", "create_keyword_coverage_scorer", "keywords")

SCORER_ID = "keyword-coverage-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "Share of the ground truth's (else the input's) keywords that the output contains"
STOP_WORD_PACKAGE = "stop-words"

_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"https?://")
# keyword-extractor's one replace: these characters anywhere, one ' at the start and one at the end.
_PUNCTUATION = re.compile("\\.|,|;|!|\\?|\\(|\\)|:|\"|^'|'\\Z|\u201c|\u201d|\u2018|\u2019")
_LONE_SYMBOL = re.compile("-|_|@|&|#")
_DIGITS = re.compile("[0-9]+")


@cache
def _stop_words() -> frozenset[str]:
    from stop_words import get_stop_words  # imported on first use: `import evalduck.scorers` stays light

    return frozenset(w.lower() for w in get_stop_words("english"))


def keywords(text: str) -> list[str]:
    """keyword-extractor's keywords of ``text`` (digits removed, lowercased, duplicates removed), with the
    stop words of ``stop-words``: the first occurrence of each, in order."""
    text = trim(_TAG.sub("", text))
    if not text:
        return []
    stop = _stop_words()
    found: dict[str, None] = {}
    for piece in split_on_whitespace(text):
        word = piece if _URL.search(piece) else _PUNCTUATION.sub("", piece)
        if len(word) == 1:
            word = _LONE_SYMBOL.sub("", word)
        if not word or _DIGITS.fullmatch(word):
            continue
        word = word.lower()
        if word not in stop:
            found.setdefault(word, None)
    return list(found)


def extract_keywords(reference: str, output: str) -> dict[str, list[str]]:
    """The preprocess result: both texts' keywords."""
    return {"referenceKeywords": keywords(reference), "responseKeywords": keywords(output)}


def coverage_analysis(extracted: Mapping[str, Any]) -> dict[str, int]:
    """How many reference keywords there are and how many of them the response has."""
    response = set(extracted["responseKeywords"])
    reference = extracted["referenceKeywords"]
    return {"totalKeywords": len(reference), "matchedKeywords": sum(1 for k in reference if k in response)}


def coverage_score(analysis: Mapping[str, int]) -> float:
    """``matched / total``; 1 when the reference has no keywords (nothing to cover)."""
    total = analysis["totalKeywords"]
    return 1.0 if total == 0 else analysis["matchedKeywords"] / total


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION, needs_judge=False, reads=("output", "ground truth (else input)"))
def create_keyword_coverage_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """The share of the ground truth's (else the input's) keywords, stop words and numbers left out, that
    the output contains. No options.

    Example:
        >>> result = create_keyword_coverage_scorer().run(input="q", output="Paris!", ground_truth="The capital is Paris")
        >>> result.preprocess_step_result["referenceKeywords"], result.score
        (['capital', 'paris'], 0.5)
    """
    parse_options(NoOptions, options, kwargs)
    return code_scorer(
        SCORER_ID, VERSION, DESCRIPTION,
        preprocess=(on_reference_and_output(SCORER_ID, extract_keywords), {"stop_words": package_version(STOP_WORD_PACKAGE)}),
        analyze=(lambda ctx: coverage_analysis(ctx.results["preprocess"]), {}),
        generate_score=(lambda ctx: coverage_score(ctx.results["analyze"]), {}),
    )
