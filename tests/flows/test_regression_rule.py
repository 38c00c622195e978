"""The regression rule of the scheduled check: a credible drop fails, noise and small drops do not."""

from __future__ import annotations

import math

from flows.regression_flow import find_regressions


def row(scorer: str, mean_delta: float | None, ci_high: float | None) -> dict[str, object]:
    return {"scorer_id": scorer, "mean_delta": mean_delta, "ci_low": None, "ci_high": ci_high}


def test_upper_bound_below_zero_is_a_regression() -> None:
    rows = [row("tone-scorer", -0.2, -0.05), row("textual-difference-scorer", -0.1, 0.02)]
    assert find_regressions(rows, max_drop=0.0) == ["tone-scorer"]


def test_max_drop_tolerates_small_credible_drops() -> None:
    rows = [row("tone-scorer", -0.04, -0.03)]
    assert find_regressions(rows, max_drop=0.05) == []
    assert find_regressions(rows, max_drop=0.01) == ["tone-scorer"]


def test_without_an_interval_the_mean_delta_decides() -> None:
    assert find_regressions([row("tone-scorer", -0.3, None)], 0.0) == ["tone-scorer"]
    assert find_regressions([row("tone-scorer", -0.3, math.nan)], 0.0) == ["tone-scorer"]
    assert find_regressions([row("tone-scorer", None, None)], 0.0) == []


def test_unchanged_scores_do_not_regress() -> None:
    assert find_regressions([row("tone-scorer", 0.0, 0.0)], 0.0) == []
