"""How well a judge agrees with people (or with another judge) on the same cells: Cohen's kappa
(quadratic-weighted on a grid of categories), Krippendorff's alpha (interval), Spearman's rho, mean absolute
error and bias (judge minus human), the confusion matrix; each with a bootstrap 95% interval (pairs resampled
2,000 times, seed 0). What each means: docs/judges.md.

Two raters and no missing value make kappa and alpha closed forms over the pairs, computed for all 2,000
resamples at once with numpy (``calibrate`` on 1,000 cells stays well under a second); tests check both
against scikit-learn's ``cohen_kappa_score`` and the ``krippendorff`` package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

__all__ = ("Agreement", "agreement", "snap", "RESAMPLES", "SEED", "HumanScaleMean", "human_scale_mean")

RESAMPLES = 2000
SEED = 0
Interval = tuple[float, float]


class Agreement(BaseModel):
    """The agreement of ``judge`` scores with ``human`` labels over ``n`` paired cells."""

    n: int
    grid: list[float]  # the categories kappa and the confusion matrix use
    kappa: float | None
    kappa_ci: Interval | None
    alpha: float | None
    alpha_ci: Interval | None
    spearman: float | None
    spearman_ci: Interval | None
    mae: float
    mae_ci: Interval | None
    bias: float  # mean of judge - human
    bias_ci: Interval | None
    confusion: list[list[int]]  # rows: the human's category, columns: the judge's (grid order)


def snap(values: Sequence[float], grid: Sequence[float]) -> list[int]:
    """Each value's category: the index of the nearest grid point (the lower one on a tie)."""
    return [min(range(len(grid)), key=lambda i: (abs(grid[i] - v), i)) for v in values]


def _kappa(x: Any, y: Any) -> Any:
    """Quadratic-weighted kappa of category indices, one value per row: 1 - E[(x-y)^2] / E[(X-Y)^2] with X, Y
    independent draws of each rater's marginal (Var x + Var y + (mean x - mean y)^2)."""
    import numpy as np

    expected = x.var(axis=-1) + y.var(axis=-1) + (x.mean(axis=-1) - y.mean(axis=-1)) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - ((x - y) ** 2).mean(axis=-1) / expected, np.nan)


def _alpha(x: Any, y: Any) -> Any:
    """Krippendorff's interval alpha for two raters, no missing value: 1 - (N-1) sum (x-y)^2 / (N sum (v-mean)^2)
    over the N = 2n values v."""
    import numpy as np

    values = np.concatenate([x, y], axis=-1)
    total = values.shape[-1]
    spread = ((values - values.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, 1 - (total - 1) * ((x - y) ** 2).sum(axis=-1) / (total * spread), np.nan)


def _spearman(x: Any, y: Any) -> Any:
    """Spearman's rho per row: Pearson's correlation of the average ranks (ties share their mean rank)."""
    import numpy as np
    from scipy.stats import rankdata

    rx, ry = rankdata(x, axis=-1), rankdata(y, axis=-1)
    rx, ry = rx - rx.mean(axis=-1, keepdims=True), ry - ry.mean(axis=-1, keepdims=True)
    denominator = np.sqrt((rx**2).sum(axis=-1) * (ry**2).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, (rx * ry).sum(axis=-1) / denominator, np.nan)


def _interval(values: Any) -> Interval | None:
    import numpy as np

    finite = values[np.isfinite(values)]
    if len(finite) < len(values) * 0.5:  # most resamples undefined (e.g. one category): no honest interval
        return None
    low, high = np.percentile(finite, [2.5, 97.5])
    return float(low), float(high)


def _point(value: Any) -> float | None:
    import math

    value = float(value)
    return None if math.isnan(value) else value


def agreement(judge: Sequence[float], human: Sequence[float], grid: Sequence[float] | None = None) -> Agreement:
    """The agreement of paired scores; ``grid`` the categories for kappa and the confusion matrix (default:
    the distinct human labels, when they are 11 or fewer, else tenths of [0, 1]).

    Raises:
        ValueError: no pairs, or sequences of different lengths.
    """
    import numpy as np

    if len(judge) != len(human):
        raise ValueError(f"{len(judge)} judge scores for {len(human)} labels")
    if not judge:
        raise ValueError("no cell is both judged and labelled: nothing to measure agreement on")
    if grid is None:
        distinct = sorted(set(human))
        grid = distinct if len(distinct) <= 11 else [i / 10 for i in range(11)]
    grid = sorted(grid)
    x, y = np.asarray(judge, dtype=float), np.asarray(human, dtype=float)
    cx, cy = np.asarray(snap(judge, grid), dtype=float), np.asarray(snap(human, grid), dtype=float)
    picks = np.random.default_rng(SEED).integers(0, len(x), size=(RESAMPLES, len(x)))
    confusion = np.zeros((len(grid), len(grid)), dtype=int)
    np.add.at(confusion, (cy.astype(int), cx.astype(int)), 1)
    stats = {
        "kappa": (_kappa(cx, cy), _kappa(cx[picks], cy[picks])),
        "alpha": (_alpha(x, y), _alpha(x[picks], y[picks])),
        "spearman": (_spearman(x, y), _spearman(x[picks], y[picks])),
        "mae": (np.abs(x - y).mean(), np.abs(x[picks] - y[picks]).mean(axis=-1)),
        "bias": ((x - y).mean(), (x[picks] - y[picks]).mean(axis=-1)),
    }
    fields: dict[str, Any] = {}
    for name, (point, resampled) in stats.items():
        fields[name] = _point(point)
        fields[f"{name}_ci"] = _interval(resampled) if fields[name] is not None else None
    return Agreement(n=len(x), grid=list(grid), confusion=confusion.tolist(), **fields)


class HumanScaleMean(BaseModel):
    """The prediction-powered estimate of a run's mean on the human labels' scale (Angelopoulos et al., 2023):
    the judge's mean over all ``n_cells`` corrected by its mean error on the ``n_labelled`` labelled ones."""

    judge_mean: float
    mean: float
    ci: Interval
    n_cells: int
    n_labelled: int


def human_scale_mean(scores: Sequence[float], labelled: Sequence[tuple[float, float]]) -> HumanScaleMean | None:
    """PPI's mean: mean(judge, all cells) - mean(judge - human, labelled cells), with the normal 95% interval of
    var(judge)/N + var(judge - human)/n. None with fewer than two labelled cells."""
    import math
    import statistics

    if len(labelled) < 2 or len(scores) < 2:
        return None
    errors = [j - h for j, h in labelled]
    judge_mean = statistics.fmean(scores)
    mean = judge_mean - statistics.fmean(errors)
    half = 1.959963984540054 * math.sqrt(statistics.variance(scores) / len(scores)
                                         + statistics.variance(errors) / len(errors))
    return HumanScaleMean(judge_mean=judge_mean, mean=mean, ci=(mean - half, mean + half), n_cells=len(scores),
                          n_labelled=len(labelled))

