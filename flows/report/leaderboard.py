"""A sweep's leaderboard: per candidate and scorer, the mean with its 95% interval and the paired delta against
the baseline, its interval and p-value adjusted for the number of candidates compared (Holm), and the
win / tie / loss counts over the items both have, beside tokens, cost and target latency.

Why Holm: a sweep of eight candidates makes seven comparisons per scorer, and at 95% one of them looks
"significant" by chance a third of the time. Holm's step-down keeps the chance of any false "better" at 5%
per scorer (the family is a scorer's comparisons against the baseline) and loses less power than Bonferroni.
The interval of the comparison with the i-th smallest p-value of m is drawn at the level Holm tests it at,
1 - 0.05 / (m - i + 1); "not distinguishable" is the Holm-adjusted p-value at or above 0.05.

Deltas are oriented by the scorer's direction before anything is ranked: for a lower-is-better scorer (a
hallucination rate) a drop is a win. The inputs are the cell aggregates (repeated judging's samples never
count as items) of the items both candidates scored.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ("ALPHA", "POINT", "CandidateScores", "Delta", "Row", "holm", "leaderboard")

ALPHA = 0.05
POINT = 0.01  # "cost per point": the cost of one hundredth of the score's scale gained over the baseline
_TIE = 1e-9  # two scores closer than this are a tie (scores are rounded floats)


@dataclass(frozen=True)
class CandidateScores:
    """What the leaderboard reads of one candidate's run(s): its cells' scores by scorer and item, and usage."""

    label: str
    scores: Mapping[str, Mapping[str, float]]  # scorer id -> item id -> the cell's score (scored cells only)
    baseline: bool = False
    judge_tokens: int = 0
    cost: float | None = None  # None: some request had no price
    latencies: Sequence[float] = field(default_factory=tuple)  # the target's seconds per item


@dataclass(frozen=True)
class Delta:
    """A candidate against the baseline on one scorer, over the items both scored; oriented so that a positive
    ``delta`` is better whatever the scorer's direction."""

    delta: float
    low: float | None
    high: float | None
    p: float
    p_holm: float
    level: float  # the interval's confidence (Holm's level for this comparison)
    n: int
    wins: int
    ties: int
    losses: int

    @property
    def distinguishable(self) -> bool:
        return self.p_holm < ALPHA


@dataclass(frozen=True)
class Row:
    """One candidate on one scorer."""

    candidate: str
    scorer: str
    baseline: bool
    n: int
    mean: float | None
    low: float | None
    high: float | None
    delta: Delta | None  # None for the baseline itself, or with no item in common
    judge_tokens: int
    cost: float | None
    cost_per_point: float | None  # extra cost per POINT gained over the baseline; None with no gain
    latency_p50: float | None
    latency_p95: float | None
    best: bool = False


def _t_quantile(df: int, level: float) -> float:
    from scipy.special import stdtrit  # Student's t quantile; scipy.stats' import costs 0.7 s

    return float(stdtrit(df, 1 - (1 - level) / 2))


def _two_sided_p(t: float, df: int) -> float:
    from scipy.special import stdtr

    return float(2 * stdtr(df, -abs(t)))


def _mean_interval(values: Sequence[float], level: float = 1 - ALPHA) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, None, None
    half = _t_quantile(len(values) - 1, level) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _differences(candidate: Mapping[str, float], baseline: Mapping[str, float], higher: bool) -> list[float]:
    sign = 1.0 if higher else -1.0
    return [sign * (candidate[item] - baseline[item]) for item in sorted(candidate.keys() & baseline.keys())]


def _p_value(diffs: Sequence[float]) -> float:
    n = len(diffs)
    mean = statistics.fmean(diffs)
    sd = statistics.stdev(diffs) if n > 1 else 0.0
    if sd <= _TIE:  # every difference the same: certain when it is not zero, nothing when it is
        return 1.0 if abs(mean) <= _TIE or n < 2 else 0.0
    return _two_sided_p(mean / (sd / math.sqrt(n)), n - 1)


def _deltas(candidates: Sequence[CandidateScores], base: CandidateScores, scorer: str,
            higher: bool) -> dict[str, Delta]:
    """Each non-baseline candidate's Delta on ``scorer``, Holm-adjusted over them."""
    diffs = {c.label: _differences(c.scores.get(scorer, {}), base.scores.get(scorer, {}), higher)
             for c in candidates if not c.baseline}
    diffs = {label: d for label, d in diffs.items() if d}
    labels = list(diffs)
    ps = [_p_value(diffs[label]) for label in labels]
    adjusted = holm(ps)
    m = len(labels)
    rank = {label: r for r, label in enumerate(sorted(labels, key=lambda lab: ps[labels.index(lab)]))}
    out = {}
    for label, p, p_holm in zip(labels, ps, adjusted, strict=True):
        d = diffs[label]
        level = 1 - ALPHA / (m - rank[label])
        mean, low, high = _mean_interval(d, level)
        assert mean is not None
        out[label] = Delta(delta=mean, low=low, high=high, p=p, p_holm=p_holm, level=level, n=len(d),
                           wins=sum(x > _TIE for x in d), ties=sum(abs(x) <= _TIE for x in d),
                           losses=sum(x < -_TIE for x in d))
    return out


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def leaderboard(candidates: Sequence[CandidateScores], higher_is_better: Mapping[str, bool],
                by: str | None = None) -> list[Row]:
    """Every (candidate, scorer) row, scorer by scorer (``by`` first, else in the order of
    ``higher_is_better``), candidates best first by their mean (a lower-is-better scorer ranks the other
    way); the best candidate of each scorer marked.

    Raises:
        ValueError: no candidate or more than one marked baseline, or ``by`` names no scorer.
    """
    bases = [c for c in candidates if c.baseline]
    if len(bases) != 1:
        raise ValueError(f"a leaderboard needs exactly one baseline candidate, got {len(bases)}")
    if by is not None and by not in higher_is_better:
        raise ValueError(f"no scorer {by!r} in this sweep; its scorers: {', '.join(higher_is_better)}")
    base = bases[0]
    scorers = ([by] if by else []) + [s for s in higher_is_better if s != by]
    p50 = {c.label: _percentile(c.latencies, 0.5) for c in candidates}
    p95 = {c.label: _percentile(c.latencies, 0.95) for c in candidates}
    rows: list[Row] = []
    for scorer in scorers:
        higher = higher_is_better[scorer]
        deltas = _deltas(candidates, base, scorer, higher)
        block = []
        for c in candidates:
            values = list(c.scores.get(scorer, {}).values())
            mean, low, high = _mean_interval(values)
            delta = deltas.get(c.label)
            gain = delta.delta if delta is not None else None
            extra = (c.cost - base.cost) if c.cost is not None and base.cost is not None else None
            per_point = extra / (gain / POINT) if extra is not None and gain is not None and gain > _TIE else None
            block.append(Row(candidate=c.label, scorer=scorer, baseline=c.baseline, n=len(values), mean=mean,
                             low=low, high=high, delta=delta, judge_tokens=c.judge_tokens, cost=c.cost,
                             cost_per_point=per_point, latency_p50=p50[c.label], latency_p95=p95[c.label]))
        sign = 1.0 if higher else -1.0
        block.sort(key=lambda r: (r.mean is None, -sign * (r.mean if r.mean is not None else 0.0)))
        if block and block[0].mean is not None:
            block[0] = Row(**{**block[0].__dict__, "best": True})
        rows.extend(block)
    return rows
