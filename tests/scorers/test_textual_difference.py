"""The textual difference scorer: its four measures by hand, its fallbacks and options, and
properties over random texts."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from evalduck.scorers import ConfigError, ScorerInputError, ScorerResult, create_textual_difference_scorer
from evalduck.scorers.prebuilt.textual_difference import VERSION, text_difference


def non_equal_opcodes(source: str, target: str) -> int:
    return sum(1 for op in Levenshtein.opcodes(source, target) if op.tag != "equal")


def test_identical_texts_score_one() -> None:
    result = create_textual_difference_scorer().run(input="q", output="The capital is Paris.", ground_truth="The capital is Paris.")
    assert result.score == 1.0
    assert result.analyze_step_result == {"ratio": 1.0, "changes": 0, "lengthDiff": 0.0, "confidence": 1.0}


def test_kitten_sitting_by_hand() -> None:
    # LCS("kitten", "sitting") = "ittn" (4): ratio = 2*4/13; opcodes: k->s, e->i, +g: 3 changes;
    # lengthDiff = 1/7, confidence = 6/7.
    result = create_textual_difference_scorer().run(input="x", output="kitten", ground_truth="sitting")
    analysis = result.analyze_step_result
    assert analysis["ratio"] == pytest.approx(8 / 13)
    assert analysis["changes"] == 3
    assert analysis["lengthDiff"] == pytest.approx(1 / 7)
    assert analysis["confidence"] == pytest.approx(6 / 7)
    assert result.score == pytest.approx(8 / 13 * 6 / 7)


def test_one_substitution_with_scale() -> None:
    result = create_textual_difference_scorer(scale=10).run(input="x", output="abc", ground_truth="abd")
    assert result.analyze_step_result["changes"] == 1
    assert result.score == pytest.approx(10 * 4 / 6)


def test_completely_different_scores_zero() -> None:
    assert create_textual_difference_scorer().run(input="q", output="abc", ground_truth="xyz").score == 0.0


def test_both_empty_is_identical() -> None:
    result = create_textual_difference_scorer().run(input="q", output="", ground_truth="")
    assert result.score == 1.0 and result.analyze_step_result["lengthDiff"] == 0.0


def test_empty_ground_truth_is_given_not_replaced_by_input() -> None:
    result = create_textual_difference_scorer().run(input="hello", output="hello", ground_truth="")
    assert result.score == 0.0


def test_falls_back_to_input_and_reads_chat_messages() -> None:
    scorer = create_textual_difference_scorer()
    chat_in = [{"role": "system", "content": "sys"}, {"role": "user", "content": "same words"}]
    chat_out = [{"role": "assistant", "content": "same words"}]
    assert scorer.run(input=chat_in, output=chat_out).score == 1.0


def test_needs_something_to_compare_with() -> None:
    with pytest.raises(ScorerInputError, match="needs `ground_truth` or `input`"):
        create_textual_difference_scorer().run(output="a")


@pytest.mark.parametrize("scale", [0, -1, float("inf"), "big"])
def test_bad_scale(scale: object) -> None:
    with pytest.raises(ConfigError, match="`scale`"):
        create_textual_difference_scorer(scale=scale)


def test_options_and_identity() -> None:
    scorer = create_textual_difference_scorer({"scale": 2.0})
    assert scorer.id == "textual-difference-scorer" and scorer.version
    assert scorer.options == {"scale": 2.0}
    assert [s.name for s in scorer.steps] == ["analyze", "generate_score"]
    assert not any(s.is_judge for s in scorer.steps)


@settings(max_examples=60, deadline=None)
@given(a=st.text(max_size=60), b=st.text(max_size=60), scale=st.floats(min_value=0.01, max_value=100))
def test_score_in_range_and_json_round_trip(a: str, b: str, scale: float) -> None:
    result = create_textual_difference_scorer(scale=scale).run(input="q", output=a, ground_truth=b)
    assert 0 <= result.score <= scale
    assert ScorerResult.model_validate_json(result.model_dump_json()) == result
    assert json.loads(json.dumps(result.model_dump(by_alias=True)))["analyzeStepResult"] == result.analyze_step_result


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=80), scale=st.floats(min_value=0.01, max_value=100))
def test_text_with_itself_scores_scale(text: str, scale: float) -> None:
    assert create_textual_difference_scorer(scale=scale).run(input="q", output=text, ground_truth=text).score == pytest.approx(scale)


def test_text_difference_is_symmetric_in_ratio() -> None:
    assert text_difference("abcd", "abxd")["ratio"] == text_difference("abxd", "abcd")["ratio"]


# Pairs on which the two directions' non-equal opcode counts differ: `changes` is the count of the edits
# that turn the reference into the output (Mastra's direction), not of those that turn the output back.
DIRECTIONAL = [
    # (reference, output, changes reference -> output, count output -> reference)
    ("ab", "bc", 1, 2),  # one replace of both characters; back: insert b, keep b, delete c
    ("aa", "babb", 3, 2),
    ("The capital of France is Paris.", "The capital of Fracae is Paris.", 1, 2),
    ("The capital of France is Paris.", "The ckaital of France is Paris.", 2, 1),
]


@pytest.mark.parametrize(("reference", "output", "changes", "backwards"), DIRECTIONAL)
def test_changes_count_the_edits_from_the_reference_to_the_output(
    reference: str, output: str, changes: int, backwards: int
) -> None:
    assert (non_equal_opcodes(reference, output), non_equal_opcodes(output, reference)) == (changes, backwards)
    scorer = create_textual_difference_scorer()
    assert scorer.run(input="q", output=output, ground_truth=reference).analyze_step_result["changes"] == changes
    # with no ground truth the input is the reference
    assert scorer.run(input=reference, output=output).analyze_step_result["changes"] == changes
    assert text_difference(output, reference)["changes"] == changes


@settings(max_examples=200, deadline=None)
@given(reference=st.text(alphabet="abc ", max_size=12), output=st.text(alphabet="abc ", max_size=12))
def test_changes_is_the_non_equal_opcode_count_from_reference_to_output(reference: str, output: str) -> None:
    # a small alphabet, so that pairs on which the two directions differ come up often
    result = create_textual_difference_scorer().run(input="q", output=output, ground_truth=reference)
    assert result.analyze_step_result["changes"] == non_equal_opcodes(reference, output)


def test_version_is_bumped_for_the_direction_of_changes() -> None:
    # version 1 counted opcodes(output, reference); cached analyze results of that version must not be reused
    assert VERSION == "2" and create_textual_difference_scorer().version == "2"
