"""How much of a judge scorer's score is the judge: statistics over the samples of cells judged several times
(``judge_samples``), per scorer. What each means and how many samples are enough: docs/judges.md.

- ``within_sd``: the pooled within-cell standard deviation, how far one judgement of the same cell moves;
  its 95% interval from a bootstrap over cells (seeded: the same samples give the same interval).
- ``icc``: ICC(1) (one-way random effects, Shrout & Fleiss 1979; McGraw & Wong 1996 for unequal sample counts),
  the share of the score's variance that is between cells, with its F-based 95% interval; ``judge_share`` is
  1 - ICC, the share that is the judge disagreeing with itself.
- ``flip_rate``: the share of cells whose samples disagree on the rounded verdict (score >= 0.5 or not), with
  its Wilson 95% interval.

scipy and numpy are imported when a run has samples, never at import.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ("JudgeNoise", "judge_noise", "noise_by_scorer", "noise_fields", "noise_table", "icc1", "wilson",
           "DELTA_NOISE_SQL", "delta_noise_line")

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
Interval = tuple[float, float]


class JudgeNoise(BaseModel):
    """One judge scorer's noise over a run's cells judged at least twice."""

    cells: int  # cells with at least two scored samples: the ones these figures are over
    samples: float  # scored samples per such cell, on average
    within_sd: float
    within_sd_ci: Interval | None
    icc: float | None  # None when every sample of every cell is the same score: nothing varies
    icc_ci: Interval | None
    judge_share: float | None
    judge_share_ci: Interval | None
    flip_rate: float
    flip_rate_ci: Interval


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> Interval:
    """Wilson's 95% score interval of a proportion (it stays inside [0, 1] at 0 and at n)."""
    if n == 0:
        raise ValueError("no trials")
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def icc1(cells: Sequence[Sequence[float]]) -> tuple[float | None, Interval | None]:
    """ICC(1) of cells (groups of repeated scores, each of two or more) and its 95% interval.

    One-way ANOVA: MSB between cells, MSW within them, k0 the adjusted group size for unequal counts:
    ICC = (MSB - MSW) / (MSB + (k0 - 1) MSW); the interval from F = MSB / MSW and the F distribution's
    quantiles with (n - 1, N - n) degrees of freedom. None when nothing varies (MSB = MSW = 0); 1 when
    the samples of each cell agree exactly but cells differ."""
    from scipy.special import fdtri  # the F quantile; scipy.stats would add ~0.5 s of import to a run's end

    n = len(cells)
    sizes = [len(c) for c in cells]
    total = sum(sizes)
    if n < 2 or any(k < 2 for k in sizes):
        raise ValueError("ICC(1) needs two or more cells of two or more samples each")
    grand = sum(sum(c) for c in cells) / total
    means = [sum(c) / len(c) for c in cells]
    ssb = sum(k * (m - grand) ** 2 for k, m in zip(sizes, means, strict=True))
    ssw = sum((x - m) ** 2 for c, m in zip(cells, means, strict=True) for x in c)
    df_b, df_w = n - 1, total - n
    msb, msw = ssb / df_b, ssw / df_w
    k0 = (total - sum(k * k for k in sizes) / total) / df_b
    if msw <= 1e-15:
        return (None, None) if msb <= 1e-15 else (1.0, (1.0, 1.0))
    icc = (msb - msw) / (msb + (k0 - 1) * msw)
    f = msb / msw
    f_low = f / float(fdtri(df_b, df_w, 0.975))
    f_high = f * float(fdtri(df_w, df_b, 0.975))
    return icc, ((f_low - 1) / (f_low + k0 - 1), (f_high - 1) / (f_high + k0 - 1))


def _within_sd(cells: Sequence[Sequence[float]]) -> tuple[float, Interval | None]:
    """The pooled within-cell SD and its bootstrap 95% interval (cells resampled with replacement)."""
    import numpy as np

    ss = np.array([sum((x - sum(c) / len(c)) ** 2 for x in c) for c in cells])
    df = np.array([len(c) - 1 for c in cells], dtype=float)
    sd = float(math.sqrt(ss.sum() / df.sum()))
    if len(cells) < 2:
        return sd, None
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = rng.integers(0, len(cells), size=(BOOTSTRAP_RESAMPLES, len(cells)))
    resampled = np.sqrt(ss[picks].sum(axis=1) / df[picks].sum(axis=1))
    low, high = np.percentile(resampled, [2.5, 97.5])
    return sd, (float(low), float(high))


def judge_noise(cells: Sequence[Sequence[float]]) -> JudgeNoise | None:
    """The noise over ``cells`` (each the scored samples of one cell); None with fewer than two cells of two
    or more samples (a run judged once, or too few cells to say anything)."""
    repeated = [list(c) for c in cells if len(c) >= 2]
    if len(repeated) < 2:
        return None
    sd, sd_ci = _within_sd(repeated)
    icc, icc_ci = icc1(repeated)
    flips = sum(1 for c in repeated if len({x >= 0.5 for x in c}) > 1)
    return JudgeNoise(
        cells=len(repeated), samples=sum(map(len, repeated)) / len(repeated), within_sd=sd, within_sd_ci=sd_ci,
        icc=icc, icc_ci=icc_ci, judge_share=None if icc is None else _share(1 - icc),
        judge_share_ci=None if icc_ci is None else (_share(1 - icc_ci[1]), _share(1 - icc_ci[0])),
        flip_rate=flips / len(repeated), flip_rate_ci=wilson(flips, len(repeated)),
    )


def _share(value: float) -> float:
    """1 - ICC as a share, in [0, 1]: ICC(1) below 0 (cells vary less than their samples) is sampling noise
    around "the items do not differ", so all of the variance is the judge's."""
    return min(1.0, max(0.0, value))


def noise_by_scorer(samples: Mapping[str, Sequence[Sequence[float]]]) -> dict[str, JudgeNoise]:
    """``judge_noise`` per scorer of a run's samples (``RunSummary.samples``), for the scorers it says anything of."""
    found = {scorer: judge_noise(cells) for scorer, cells in samples.items()}
    return {scorer: noise for scorer, noise in found.items() if noise is not None}


def noise_fields(noise: JudgeNoise | None) -> dict[str, Any]:
    """The flat fields a summary row carries for a scorer (empty without noise): exact values."""
    if noise is None:
        return {}
    return {"judge_samples": noise.samples, "judge_sd": noise.within_sd, "judge_sd_ci": noise.within_sd_ci,
            "judge_icc": noise.icc, "judge_icc_ci": noise.icc_ci, "judge_share": noise.judge_share,
            "judge_share_ci": noise.judge_share_ci, "judge_flip_rate": noise.flip_rate,
            "judge_flip_rate_ci": noise.flip_rate_ci}


def _with_ci(value: float | None, ci: Sequence[float] | None, digits: int = 3) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}" + (f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci is not None else "")


def noise_table(rows: Mapping[str, Mapping[str, Any]]) -> Table | None:
    """The judge's noise per scorer (rows: scorer id -> its summary fields, ``noise_fields``), or None when no
    scorer of the run was judged more than once: what `evalduck show` and a run's summary print."""
    from rich.table import Table

    from evalduck.flows.report.text import literal

    shown = {scorer: r for scorer, r in rows.items() if r.get("judge_sd") is not None}
    if not shown:
        return None
    table = Table(title="Judge noise (cells judged more than once; 95% intervals)", title_justify="left")
    for column in ("scorer", "samples", "judge SD", "judge share of variance", "flip rate"):
        table.add_column(column, justify="left" if column == "scorer" else "right", no_wrap=column != "scorer")
    for scorer, r in shown.items():
        table.add_row(literal(scorer), f"{r['judge_samples']:.3g}", _with_ci(r["judge_sd"], r.get("judge_sd_ci")),
                      _with_ci(r.get("judge_share"), r.get("judge_share_ci")),
                      _with_ci(r["judge_flip_rate"], r.get("judge_flip_rate_ci")))
    return table


# Per scorer of two runs' paired cells: the variance of the paired deltas, and how much of it the judge's noise
# accounts for, from each side's cells judged more than once (a cell's aggregate varies by its samples' variance
# over their count; a side judged once contributes what is unknown, and is said to).
DELTA_NOISE_SQL = """
SELECT a.scorer_id, count(*) AS n, var_samp(b.score - a.score) AS var_delta,
       avg(CASE WHEN a.samples > 1 THEN coalesce(a.score_sd, 0) ^ 2 / a.samples END) AS judge_var_a,
       avg(CASE WHEN b.samples > 1 THEN coalesce(b.score_sd, 0) ^ 2 / b.samples END) AS judge_var_b,
       max(a.samples) AS k_a, max(b.samples) AS k_b
FROM scores AS a JOIN scores AS b ON a.scorer_id = b.scorer_id AND a.item_id = b.item_id
WHERE a.run_id = ? AND b.run_id = ? AND a.status = 'scored' AND b.status = 'scored'
GROUP BY a.scorer_id HAVING coalesce(max(a.samples), 1) > 1 OR coalesce(max(b.samples), 1) > 1
ORDER BY a.scorer_id
"""


def delta_noise_line(row: Mapping[str, Any]) -> str:
    """One line on a paired comparison: the share of the deltas' variance that is the judge's noise."""
    parts = [row.get("judge_var_a"), row.get("judge_var_b")]
    known = sum(p for p in parts if p is not None)
    var_delta = row.get("var_delta") or 0.0
    sides = ", ".join(f"run {side} judged {'%g' % (k or 1)}x" for side, k in (("A", row.get("k_a")), ("B", row.get("k_b"))))
    if var_delta <= 0:
        return f"judge noise in {row['scorer_id']}'s delta: the deltas do not vary ({sides})"
    share = min(1.0, known / var_delta)
    unknown = " (run " + " and ".join(side for side, p in zip("AB", parts, strict=True) if p is None) + \
        "'s judge noise unknown: judged once, counted as none)" if None in parts else ""
    return (f"judge noise: {share:.0%} of {row['scorer_id']}'s paired-delta variance ({sides}; judge variance "
            f"{known:.4f} of {var_delta:.4f}){unknown}")

