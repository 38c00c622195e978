"""The one regression rule (`evalduck.flows.report.gate`) of `evalduck compare --fail-below` and `regression_check`; the
two agree on the same data in tests/cli/test_results_cli.py."""

from __future__ import annotations

import math

from evalduck.flows.report.gate import gate


def row(scorer: str, mean_delta: float | None, ci_high: float | None) -> dict[str, object]:
    return {"scorer_id": scorer, "mean_delta": mean_delta, "ci_low": None, "ci_high": ci_high}


def test_upper_bound_below_zero_is_a_regression() -> None:
    verdict = gate([row("tone-scorer", -0.2, -0.05), row("textual-difference-scorer", -0.1, 0.02)], max_drop=0.0)
    assert verdict.regressed == ["tone-scorer"] and verdict.ungated == []


def test_max_drop_tolerates_small_credible_drops() -> None:
    rows = [row("tone-scorer", -0.04, -0.03)]
    assert gate(rows, max_drop=0.05).regressed == []
    assert gate(rows, max_drop=0.01).regressed == ["tone-scorer"]


def test_without_an_interval_a_scorer_is_not_gated_whatever_its_mean_delta() -> None:
    for ci_high in (None, math.nan):
        verdict = gate([row("tone-scorer", -0.3, ci_high)], 0.0)
        assert verdict.regressed == [] and verdict.ungated == ["tone-scorer"]


def test_unchanged_scores_do_not_regress() -> None:
    assert gate([row("tone-scorer", 0.0, 0.0)], 0.0).regressed == []


def test_a_lower_is_better_scorer_regresses_when_its_lower_bound_rises_above_max_drop() -> None:
    def lower(ci_low: float, ci_high: float) -> dict[str, object]:
        return {"scorer_id": "bias-scorer", "higher_is_better": False, "mean_delta": (ci_low + ci_high) / 2,
                "ci_low": ci_low, "ci_high": ci_high}

    assert gate([lower(0.05, 0.2)], 0.0).regressed == ["bias-scorer"]  # a credible rise
    assert gate([lower(0.05, 0.2)], 0.1).regressed == []  # within the tolerated rise
    assert gate([lower(-0.3, -0.1)], 0.0).regressed == []  # a fall is an improvement
    assert gate([lower(-0.05, 0.2)], 0.0).regressed == []  # the interval holds "no change"
    verdict = gate([{**lower(0.1, 0.2), "ci_low": None}], 0.0)
    assert verdict.ungated == ["bias-scorer"]


def test_the_judge_rule_of_min_agreement() -> None:
    from evalduck.flows.report.gate import judge_refusals

    key = {"scorer_id": "faith", "scorer_version": "1", "judge_model": "openai/m", "prompt_fingerprint": "p1"}
    good = {"kappa": 0.8, "kappa_low": 0.7, "n": 50}
    assert judge_refusals({"faith": key}, {"faith": good}, {}, 0.6) == []
    (weak,) = judge_refusals({"faith": key}, {"faith": {**good, "kappa_low": 0.55}}, {}, 0.6)
    assert weak == ("faith judged by openai/m: its calibration's kappa lower bound 0.550 is below --min-agreement "
                    "0.6 (kappa 0.800 over 50 labelled cells): use a better judge or prompt, or more labels")
    (none,) = judge_refusals({"faith": key}, {"faith": None},
                             {"faith": [{**key, "prompt_fingerprint": "p0", "judge_model": "openai/m"}]}, 0.6)
    assert "has no calibration; calibrated only for openai/m prompt p0 version 1 (the prompt or model changed" in none
    (old,) = judge_refusals({"faith": {**key, "prompt_fingerprint": None}}, {}, {}, 0.6)
    assert "recorded no prompt fingerprint (run by an older evalduck)" in old
