"""Answer similarity (SCORERS.md 1.3): fact-by-fact matches with the ground truth, bonus and penalties."""

from __future__ import annotations

from typing import Any

import pytest
from judged import JUDGE

from evalduck.scorers import ConfigError, InvalidJudgeAnswer, NotScorable, create_answer_similarity_scorer
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer


def analysis(kinds: list[str], extra: int = 0, contradictions: int = 0) -> dict[str, Any]:
    return {
        "analyze": {
            "matches": [{"groundTruthUnit": f"g{i}", "outputUnit": None, "matchType": k, "explanation": "e"} for i, k in enumerate(kinds)],
            "extraInOutput": [f"x{i}" for i in range(extra)],
            "contradictions": [{"outputUnit": "o", "groundTruthUnit": "g", "explanation": "e"}] * contradictions,
        }
    }


@pytest.mark.parametrize(
    ("kinds", "extra", "contradictions", "options", "expected"),
    [
        (["exact"], 0, 0, {}, 1.0),  # 1.2 / 1.2
        (["exact", "semantic"], 0, 0, {}, 0.83),  # (1.2 + 0.8) / 2.4 = 0.8333
        (["semantic", "partial", "missing"], 0, 0, {}, 0.29),  # (0.8 + 0.4 - 0.15) / 3.6 = 0.29166
        (["missing", "missing"], 0, 0, {}, 0.0),  # negative, floored at 0
        (["exact", "exact"], 3, 0, {}, 0.85),  # 1 - 0.15
        (["exact", "exact"], 9, 0, {}, 0.8),  # the extra penalty stops at 0.2
        (["exact", "semantic"], 0, 1, {}, 0.0),  # a contradiction costs 1.0
        (["exact", "semantic"], 0, 1, {"contradiction_penalty": 0.5}, 0.33),
        (["Exact ", " SEMANTIC"], 0, 0, {"scale": 10}, 8.33),
        (["partial", "partial"], 0, 0, {"semantic_threshold": 0.5, "exact_match_bonus": 0}, 0.25),
        (["exact", "missing"], 0, 0, {"exact_match_bonus": 0, "missing_penalty": 0}, 0.5),
        (["partial"], 0, 0, {"semantic_threshold": 0.25, "exact_match_bonus": 0}, 0.13),  # 0.125 rounds half up
        ([], 0, 0, {}, 0.0),  # no matches
    ],
)
def test_formula(kinds: list[str], extra: int, contradictions: int, options: dict[str, Any], expected: float, step_result: Any) -> None:
    scorer = create_answer_similarity_scorer(JUDGE, **options)
    assert step_result(scorer, "generate_score", analysis(kinds, extra, contradictions), ground_truth="g") == expected


def test_run_against_the_fake_judge(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_answer_similarity_scorer(fake_judge).run(
        input="Tell me about Paris.", output="Paris is the capital of France. It has many bakeries.",
        ground_truth="Paris is the capital of France. The Seine flows through Paris.",
    )
    assert result.preprocess_step_result["groundTruthUnits"] == ["Paris is the capital of France.", "The Seine flows through Paris."]
    assert [m["matchType"] for m in result.analyze_step_result["matches"]] == ["exact", "missing"]
    assert result.analyze_step_result["extraInOutput"] == ["It has many bakeries."]
    assert result.score == 0.39  # (1.2 - 0.15) / 2.4 - 0.05 = 0.3875
    assert fake.request_count == 3


def test_no_ground_truth(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    with pytest.raises(NotScorable, match=r"answer-similarity-scorer needs `ground_truth`.*require_ground_truth=False"):
        create_answer_similarity_scorer(fake_judge).run(input="q", output="An answer.")
    result = create_answer_similarity_scorer(fake_judge, requireGroundTruth=False).run(input="q", output="An answer.")
    assert result.score == 0.0 and result.analyze_step_result == {"matches": [], "extraInOutput": [], "contradictions": []}
    assert "no ground truth was given" in (result.reason or "")
    assert fake.request_count == 0


@pytest.mark.parametrize("options", [{}, {"require_ground_truth": False}])
def test_no_ground_truth_scores_0_whatever_analyze_returned(options: dict[str, Any], step_result: Any) -> None:
    """generate_score alone, given exact matches (a cached or hand-fed analyze result): still 0, no ground truth."""
    scorer = create_answer_similarity_scorer(JUDGE, **options)
    assert step_result(scorer, "generate_score", analysis(["exact", "exact"])) == 0.0
    assert step_result(scorer, "generate_score", analysis(["exact", "exact"]), ground_truth="g") == 1.0


def test_blank_ground_truth_is_a_shortcut_and_blank_output_is_asked(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_answer_similarity_scorer(fake_judge).run(input="q", output="An answer.", ground_truth=" ")
    assert result.preprocess_step_result == {"outputUnits": [], "groundTruthUnits": []} and result.score == 0.0
    assert fake.request_count == 0
    result = create_answer_similarity_scorer(fake_judge).run(input="q", output="", ground_truth="Paris is in France.")
    assert [m["matchType"] for m in result.analyze_step_result["matches"]] == ["missing"] and result.score == 0.0
    assert fake.request_count == 3


def test_one_match_per_ground_truth_unit(fake: FakeOpenAIServer, fake_judge: dict[str, Any], step_result: Any) -> None:
    scorer = create_answer_similarity_scorer(fake_judge)
    earlier = {"preprocess": {"outputUnits": ["a"], "groundTruthUnits": ["a", "b"]}}
    bad = {"matches": [{"groundTruthUnit": "a", "outputUnit": "a", "matchType": "close", "explanation": "e"}] * 2,
           "extraInOutput": [], "contradictions": []}
    one = {"groundTruthUnit": "a", "outputUnit": "a", "matchType": " Exact", "explanation": "e"}
    fake.script(bad, {**bad, "matches": [one]})
    with pytest.raises(InvalidJudgeAnswer, match="expected 2 entries in `matches`, one per ground-truth unit, got 1") as info:
        step_result(scorer, "analyze", earlier, **{"ground_truth": "a. b."})
    assert "must be one of exact, semantic, partial, missing, got 'close'" in str(info.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"semantic_threshold": 1.5}, "`semantic_threshold` must be between 0 and 1, got 1.5"),
        ({"extraInfoPenalty": -0.1}, "`extra_info_penalty` must be between 0 and 1, got -0.1"),
        ({"require_ground_truth": "yes"}, "`require_ground_truth`"),
        ({"require_ground_truth": 1}, "`require_ground_truth`"),
        ({"scale": -1}, "`scale`"),
    ],
)
def test_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_answer_similarity_scorer(JUDGE, **options)
