"""Keyword coverage (SCORERS.md 2.3): keyword-extractor's tokenizer with stop-words' English list."""

from __future__ import annotations

from typing import Any

import pytest

from evalduck.scorers import ConfigError, create_keyword_coverage_scorer
from evalduck.scorers.prebuilt.keyword_coverage import keywords


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The capital is Paris", ["capital", "paris"]),
        ("<p>Paris</p> <b>PARIS</b>, paris!", ["paris"]),  # tags removed, lowercased, first occurrence once
        ("  \u3000 ", []),
        ("1999 2024 42nd", ["42nd"]),  # ASCII digits only are dropped
        ("\u0661\u0662", ["\u0661\u0662"]),  # other digits are not (JavaScript's \d is ASCII)
        ("see https://x.io/a?b. museum", ["https://x.io/a?b.", "museum"]),  # a URL keeps its punctuation
        ("(quoted) “curly” ‘single’ \"plain\"", ["quoted", "curly", "single", "plain"]),
        ("'ok'. 'louvre", ["ok'", "louvre"]),  # one replace: the trailing ' is not last until "." goes
        ("# @ - _ & x-ray #tag", ["x-ray", "#tag"]),  # a lone symbol goes, inside a word it stays
        ("paris\ufeffrome", ["paris", "rome"]),  # U+FEFF is JavaScript whitespace
        ("paris\x85rome", ["paris\x85rome"]),  # U+0085 is not
    ],
)
def test_keywords(text: str, expected: list[str]) -> None:
    assert keywords(text) == expected


@pytest.mark.parametrize(
    ("analysis", "score"),
    [({"totalKeywords": 0, "matchedKeywords": 0}, 1.0), ({"totalKeywords": 4, "matchedKeywords": 3}, 0.75),
     ({"totalKeywords": 3, "matchedKeywords": 0}, 0.0)],
)
def test_score(step_result: Any, analysis: dict[str, int], score: float) -> None:
    assert step_result(create_keyword_coverage_scorer(), "generate_score", {"analyze": analysis}) == score


def test_analyze_counts_reference_keywords_found(step_result: Any) -> None:
    extracted = {"referenceKeywords": ["paris", "capital", "france"], "responseKeywords": ["france", "paris", "big"]}
    assert step_result(create_keyword_coverage_scorer(), "analyze", {"preprocess": extracted}) == {
        "totalKeywords": 3, "matchedKeywords": 2}


def test_through_a_run() -> None:
    scorer = create_keyword_coverage_scorer()
    result = scorer.run(input="q", output="Paris is lovely.", ground_truth="The capital is Paris")
    assert result.preprocess_step_result == {"referenceKeywords": ["capital", "paris"], "responseKeywords": ["paris", "lovely"]}
    assert result.analyze_step_result == {"totalKeywords": 2, "matchedKeywords": 1} and result.score == 0.5
    assert scorer.run(input="q", output="anything", ground_truth="").score == 1.0  # nothing to cover
    assert scorer.run(input="Where is the Louvre?", output="In Paris.").score == 0.0  # the input, without a ground truth


def test_the_stop_word_package_is_in_the_key() -> None:
    assert create_keyword_coverage_scorer().step("preprocess").params == {"stop_words": "stop-words==2025.11.4"}


def test_no_options() -> None:
    with pytest.raises(ConfigError, match="unknown option `language`"):
        create_keyword_coverage_scorer({"language": "fr"})
