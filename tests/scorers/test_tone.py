"""The tone scorer (SPEC 3.2): comparison against a reference tone and stability without one, the
reference's fallbacks, options, and properties over random texts."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalduck.scorers import ConfigError, ScorerResult, create_tone_scorer
from evalduck.scorers.prebuilt.tone import compound, tone_analysis, tone_score

HAPPY = "I absolutely love this, thank you so much, it is wonderful!"
ANGRY = "This is terrible, I hate it and I am furious."


class TestFormula:
    def test_comparison(self) -> None:
        assert tone_score({"responseSentiment": 0.5, "referenceSentiment": -0.5, "difference": 1.0}, 1.0) == 0.5
        assert tone_score({"responseSentiment": 1, "referenceSentiment": -1, "difference": 2.0}, 3.0) == 0.0
        assert tone_score({"responseSentiment": 0.2, "referenceSentiment": 0.2, "difference": 0.0}, 2.0) == 2.0

    def test_stability(self) -> None:
        assert tone_score({"avgSentiment": 0.0, "sentimentVariance": 0.25}, 1.0) == 0.75
        assert tone_score({"avgSentiment": 0.0, "sentimentVariance": 1.0}, 1.0) == 0.0


class TestComparisonMode:
    def test_same_tone_scores_one(self) -> None:
        result = create_tone_scorer().run(input="q", output=HAPPY, ground_truth=HAPPY)
        assert result.score == 1.0
        assert result.analyze_step_result["difference"] == 0.0

    def test_opposite_tones_score_low(self) -> None:
        result = create_tone_scorer().run(input="q", output=ANGRY, ground_truth=HAPPY)
        analysis = result.analyze_step_result
        assert analysis["responseSentiment"] < -0.5 < 0.5 < analysis["referenceSentiment"]
        assert analysis["difference"] == pytest.approx(abs(compound(ANGRY) - compound(HAPPY)))
        assert result.score == pytest.approx(1 - analysis["difference"] / 2)
        assert result.score <= 0.3  # the seed's "low consistency" band

    def test_reference_is_reference_tone_then_ground_truth_then_input(self) -> None:
        run = {"input": ANGRY, "output": HAPPY, "groundTruth": "It is fine."}
        assert create_tone_scorer(reference_tone=HAPPY).run(run).analyze_step_result["referenceSentiment"] == compound(HAPPY)
        assert create_tone_scorer().run(run).analyze_step_result["referenceSentiment"] == compound("It is fine.")
        without_gt = {"input": ANGRY, "output": HAPPY}
        assert create_tone_scorer().run(without_gt).analyze_step_result["referenceSentiment"] == compound(ANGRY)

    def test_scale(self) -> None:
        one = create_tone_scorer().run(input=ANGRY, output=HAPPY).score
        assert create_tone_scorer(scale=5).run(input=ANGRY, output=HAPPY).score == pytest.approx(5 * one)


class TestStabilityMode:
    def test_empty_reference_means_stability_of_output(self) -> None:
        text = "I love it. I hate it. It is a table"
        result = create_tone_scorer().run(input="q", output=text, ground_truth="")
        values = [compound("I love it."), compound("I hate it."), compound("It is a table")]
        assert result.analyze_step_result == pytest.approx(
            {"avgSentiment": statistics.fmean(values), "sentimentVariance": statistics.pvariance(values)}
        )
        assert result.score == pytest.approx(1 - statistics.pvariance(values))

    def test_empty_output_uses_reference(self) -> None:
        result = create_tone_scorer().run(input="Great. Great.", output="")
        assert result.analyze_step_result["sentimentVariance"] == 0.0
        assert result.score == 1.0

    def test_both_empty(self) -> None:
        result = create_tone_scorer(scale=2).run(input="", output="")
        assert result.analyze_step_result == {"avgSentiment": 0.0, "sentimentVariance": 0.0}
        assert result.score == 2.0

    def test_trailing_text_without_punctuation_counts(self) -> None:
        analysis = tone_analysis("Fine. I hate this so much", "")
        assert analysis["sentimentVariance"] > 0


def test_bad_options() -> None:
    with pytest.raises(ConfigError, match="`scale` must be a finite number greater than 0, got -1"):
        create_tone_scorer(scale=-1)
    with pytest.raises(ValueError, match="unknown option `tone`"):
        create_tone_scorer(tone="happy")


def test_reference_tone_changes_only_the_analyze_key() -> None:
    a, b = create_tone_scorer(), create_tone_scorer(reference_tone="calm")
    ctx = a.context_for("analyze", {"input": "q", "output": "o"})
    assert a.step("analyze").cache_key(ctx) != b.step("analyze").cache_key(ctx)
    score_ctx = a.context_for("generate_score", {"input": "q", "output": "o"}, {"analyze": {"difference": 0.1}})
    assert a.step("generate_score").cache_key(score_ctx) == b.step("generate_score").cache_key(score_ctx)


@settings(max_examples=40, deadline=None)
@given(
    output=st.text(max_size=80),
    reference=st.none() | st.text(max_size=80),
    scale=st.floats(min_value=0.01, max_value=100),
)
def test_score_in_range_and_json_round_trip(output: str, reference: str | None, scale: float) -> None:
    result = create_tone_scorer(scale=scale).run(input="How was it?", output=output, ground_truth=reference)
    assert 0 <= result.score <= scale
    assert ScorerResult.model_validate_json(result.model_dump_json(by_alias=True)) == result
