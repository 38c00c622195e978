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

__all__ = ("ALPHA", "POINT", "CandidateScores", "CandidateStats", "Delta", "Moments", "Paired", "Row", "holm",
           "leaderboard", "summarize")

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


@dataclass(frozen=True)
class Moments:
    """Scores summed up: how many, their mean and sample SD (None below two)."""

    n: int
    mean: float | None
    sd: float | None


@dataclass(frozen=True)
class Paired:
    """A candidate's paired differences from the baseline on one scorer (candidate minus baseline, as scored,
    not yet oriented), summed up: how many items, their mean and SD, and how many went up, stayed, went down."""

    n: int
    mean: float
    sd: float | None
    up: int
    same: int
    down: int


@dataclass(frozen=True)
class CandidateStats:
    """A candidate as the leaderboard needs it: per scorer its Moments and, unless it is the baseline, its
    Paired differences. The store computes these in SQL (flows/store/sweeps.py); ``summarize`` in Python."""

    label: str
    scores: Mapping[str, Moments]
    paired: Mapping[str, Paired]
    baseline: bool = False
    judge_tokens: int = 0
    cost: float | None = None
    latencies: Sequence[float] = field(default_factory=tuple)


def _moments(values: Sequence[float]) -> Moments:
    return Moments(n=len(values), mean=statistics.fmean(values) if values else None,
                   sd=statistics.stdev(values) if len(values) > 1 else None)


def summarize(candidates: Sequence[CandidateScores]) -> list[CandidateStats]:
    """Each candidate's scores summed up against the (one) baseline's, item by item."""
    base = next((c for c in candidates if c.baseline), None)
    out = []
    for c in candidates:
        paired = {}
        for scorer, cells in c.scores.items():
            theirs = base.scores.get(scorer, {}) if base is not None and not c.baseline else {}
            d = [cells[item] - theirs[item] for item in sorted(cells.keys() & theirs.keys())]
            if d:
                paired[scorer] = Paired(n=len(d), mean=statistics.fmean(d),
                                        sd=statistics.stdev(d) if len(d) > 1 else None, up=sum(x > _TIE for x in d),
                                        same=sum(abs(x) <= _TIE for x in d), down=sum(x < -_TIE for x in d))
        out.append(CandidateStats(label=c.label, baseline=c.baseline, judge_tokens=c.judge_tokens, cost=c.cost,
                                  latencies=c.latencies, paired=paired,
                                  scores={scorer: _moments(list(cells.values())) for scorer, cells in c.scores.items()}))
    return out


def _interval(m: Moments, level: float = 1 - ALPHA) -> tuple[float | None, float | None]:
    if m.mean is None or m.sd is None:
        return None, None
    half = _t_quantile(m.n - 1, level) * m.sd / math.sqrt(m.n)
    return m.mean - half, m.mean + half


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


def _p_value(d: Paired) -> float:
    sd = d.sd or 0.0
    if sd <= _TIE:  # every difference the same: certain when it is not zero, nothing when it is
        return 1.0 if abs(d.mean) <= _TIE or d.n < 2 else 0.0
    return _two_sided_p(d.mean / (sd / math.sqrt(d.n)), d.n - 1)


def _deltas(candidates: Sequence[CandidateStats], scorer: str, higher: bool) -> dict[str, Delta]:
    """Each non-baseline candidate's Delta on ``scorer``, oriented, Holm-adjusted over them."""
    pairs = {c.label: c.paired[scorer] for c in candidates if not c.baseline and scorer in c.paired}
    labels = list(pairs)
    ps = [_p_value(pairs[label]) for label in labels]
    adjusted = holm(ps)
    m = len(labels)
    rank = {label: r for r, label in enumerate(sorted(labels, key=lambda lab: ps[labels.index(lab)]))}
    sign = 1.0 if higher else -1.0
    out = {}
    for label, p, p_holm in zip(labels, ps, adjusted, strict=True):
        d = pairs[label]
        level = 1 - ALPHA / (m - rank[label])
        low, high = _interval(Moments(n=d.n, mean=sign * d.mean, sd=d.sd), level)
        wins, losses = (d.up, d.down) if higher else (d.down, d.up)
        out[label] = Delta(delta=sign * d.mean, low=low, high=high, p=p, p_holm=p_holm, level=level, n=d.n,
                           wins=wins, ties=d.same, losses=losses)
    return out


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def leaderboard(candidates: Sequence[CandidateScores] | Sequence[CandidateStats], higher_is_better: Mapping[str, bool],
                by: str | None = None) -> list[Row]:
    """Every (candidate, scorer) row, scorer by scorer (``by`` first, else in the order of
    ``higher_is_better``), candidates best first by their mean (a lower-is-better scorer ranks the other
    way); the best candidate of each scorer marked.

    ``candidates`` are all ``CandidateScores`` (item by item) or all ``CandidateStats`` (summed up).

    Raises:
        ValueError: no candidate or more than one marked baseline, or ``by`` names no scorer.
    """
    every = [c for c in candidates if isinstance(c, CandidateStats)]
    if len(every) != len(candidates):  # item by item: summed up here (the store sums up in SQL)
        every = summarize([c for c in candidates if isinstance(c, CandidateScores)])
    bases = [c for c in every if c.baseline]
    if len(bases) != 1:
        raise ValueError(f"a leaderboard needs exactly one baseline candidate, got {len(bases)}")
    if by is not None and by not in higher_is_better:
        raise ValueError(f"no scorer {by!r} in this sweep; its scorers: {', '.join(higher_is_better)}")
    base = bases[0]
    scorers = ([by] if by else []) + [s for s in higher_is_better if s != by]
    rows: list[Row] = []
    for scorer in scorers:
        if not any(c.scores.get(scorer) and c.scores[scorer].n for c in every):
            continue  # skipped or failed throughout (no judge model, say): nothing to rank
        higher = higher_is_better[scorer]
        deltas = _deltas(every, scorer, higher)
        block = []
        for c in every:
            m = c.scores.get(scorer, Moments(n=0, mean=None, sd=None))
            low, high = _interval(m)
            delta = deltas.get(c.label)
            gain = delta.delta if delta is not None else None
            extra = (c.cost - base.cost) if c.cost is not None and base.cost is not None else None
            per_point = extra / (gain / POINT) if extra is not None and gain is not None and gain > _TIE else None
            block.append(Row(candidate=c.label, scorer=scorer, baseline=c.baseline, n=m.n, mean=m.mean,
                             low=low, high=high, delta=delta, judge_tokens=c.judge_tokens, cost=c.cost,
                             cost_per_point=per_point, latency_p50=_percentile(c.latencies, 0.5),
                             latency_p95=_percentile(c.latencies, 0.95)))
        sign = 1.0 if higher else -1.0
        block.sort(key=lambda r: (r.mean is None, -sign * (r.mean if r.mean is not None else 0.0)))
        if block and block[0].mean is not None:
            block[0] = Row(**{**block[0].__dict__, "best": True})
        rows.extend(block)
    return rows
