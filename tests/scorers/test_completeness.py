"""Completeness (SCORERS.md 2.1): lemmatised elements of the reference, covered by the output's."""

from __future__ import annotations

from typing import Any

import pytest

from evalduck.scorers import ConfigError, create_completeness_scorer
from evalduck.scorers.prebuilt.completeness import covered, elements, pieces


def test_pieces() -> None:
    assert pieces("Café-au-lait, NAÏVE! 東京 x2 _a_") == ["cafe", "au", "lait", "naive", "x2", "a"]
    assert pieces("東京 ") == [] and pieces("") == []


def test_elements_are_lemmas_in_order_each_once() -> None:
    assert elements("The cats are running; cats ran.") == ["the", "cat", "be", "run"]
    assert elements("colors") == ["color"]  # Mastra keeps "colors"


@pytest.mark.parametrize(
    ("element", "others", "result"),
    [
        ("cat", ["cats"], False),  # up to 3 characters: equal only
        ("cat", ["cat"], True),
        ("color", ["colors"], True),  # 5/6 > 0.6
        ("sleep", ["sleeping"], True),  # 5/8
        ("runner", ["run"], False),  # 3/6
        ("abcde", ["abc"], False),  # 3/5 is not over 0.6
        ("abcd", ["abce"], False),  # equal lengths: equal only
        ("abcd", ["xabcd"], True),  # the element inside the longer output element
    ],
)
def test_covered(element: str, others: list[str], result: bool) -> None:
    assert covered(element, others) is result


@pytest.mark.parametrize(
    ("ref", "out", "score"),
    [
        ([], [], 1.0),
        ([], ["x"], 0.0),
        (["a", "b"], [], 0.0),
        (["color", "cat", "runner"], ["colors", "cats", "run"], 1 / 3),
        (["the", "cat", "be", "sleep"], ["a", "cat", "be", "sleep"], 0.75),
    ],
)
def test_score(step_result: Any, ref: list[str], out: list[str], score: float) -> None:
    analysis = {"inputElements": ref, "outputElements": out, "missingElements": [], "elementCounts": {}}
    assert step_result(create_completeness_scorer(), "generate_score", {"preprocess": analysis}) == score


def test_through_a_run() -> None:
    result = create_completeness_scorer().run(input="q", output="The cats are sleeping.", ground_truth="A cat is sleeping")
    assert result.preprocess_step_result == {
        "inputElements": ["a", "cat", "be", "sleep"],
        "outputElements": ["the", "cat", "be", "sleep"],
        "missingElements": ["a"],
        "elementCounts": {"input": 4, "output": 4},
    }
    assert result.score == 0.75
    same = "Paris is the capital of France, with 2.1 million people."
    assert create_completeness_scorer().run(input=same, output=same).score == 1.0


def test_the_lemma_package_is_in_the_key() -> None:
    assert create_completeness_scorer().step("preprocess").params == {"lemmatizer": "simplemma==2.0.0"}


def test_no_options() -> None:
    with pytest.raises(ConfigError, match="unknown option `scale`"):
        create_completeness_scorer(scale=2)
