"""Per-scorer statistics of runs and the trend over a name's last runs: what the report, the run's artifacts
and `evalduck show` all read (no prefect, no chart library here).

The mean's 95% interval is the store's: the `run_scorer_summary` view's mean and sample deviation with the
stored `t975` quantile, mean ± t(0.975, n−1)·sd/√n, the same t interval `compare_runs` gives paired deltas.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel

from evalduck.flows.report.html.reader import Records

__all__ = ("DEFAULT_LAST", "ScorerStats", "scorer_stats", "trend_run_ids", "previous_completed", "sparkline",
           "trend_by_scorer")

DEFAULT_LAST = 10  # runs in a trend: the report's --last, the run's own report and artifact, `show`'s sparkline

_STATS = """
SELECT s.run_id, s.started_at, s.scorer_id, s.scorer_version, s.judge_model,
       s.n_cells, s.n_scored, s.n_errors, s.n_skipped,
       s.mean_score, s.stddev_score, s.min_score, s.max_score,
       s.mean_score - t975(s.n_scored - 1) * s.stddev_score / sqrt(s.n_scored) AS ci_low,
       s.mean_score + t975(s.n_scored - 1) * s.stddev_score / sqrt(s.n_scored) AS ci_high,
       coalesce(s.prompt_tokens, 0) + coalesce(s.completion_tokens, 0) AS judge_tokens,
       s.cost
FROM run_scorer_summary AS s
WHERE list_contains(?, s.run_id)
ORDER BY s.started_at, s.run_id, s.scorer_id
"""

# The run itself, and the completed runs of its name that started before it; newest first.
_TREND = """
SELECT r.run_id FROM runs AS r, (SELECT name, started_at FROM runs WHERE run_id = $run) AS this
WHERE r.name = this.name AND (r.run_id = $run OR (r.status = 'completed' AND r.started_at <= this.started_at))
ORDER BY r.started_at DESC, r.run_id DESC
LIMIT $last
"""

_PREVIOUS = """
SELECT r.run_id FROM runs AS r, (SELECT name, started_at FROM runs WHERE run_id = $run) AS this
WHERE r.name = this.name AND r.status = 'completed' AND r.run_id <> $run AND r.started_at <= this.started_at
ORDER BY r.started_at DESC, r.run_id DESC
LIMIT 1
"""


class ScorerStats(BaseModel):
    """One scorer in one run: counts by status, the mean over scored cells with its 95% t interval."""

    run_id: str
    started_at: datetime | None
    scorer_id: str
    scorer_version: str | None = None
    judge_model: str | None = None
    n_cells: int
    n_scored: int
    n_errors: int
    n_skipped: int
    mean_score: float | None = None
    stddev_score: float | None = None
    min_score: float | None = None
    max_score: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    judge_tokens: int = 0
    cost: float | None = None


def scorer_stats(records: Records, run_ids: Sequence[str]) -> list[ScorerStats]:
    """Stats of every scorer of the given runs (ids, not references), oldest run first."""
    if not run_ids:
        return []
    return [ScorerStats.model_validate(r) for r in records(_STATS, [list(run_ids)])]


def trend_run_ids(records: Records, run_id: str, last: int = DEFAULT_LAST) -> list[str]:
    """The run and up to ``last - 1`` completed runs of its name before it, oldest first (only the run
    itself when it has no name)."""
    rows = records(_TREND, {"run": run_id, "last": max(1, last)})
    ids = [str(r["run_id"]) for r in reversed(rows)]
    return ids or [run_id]


def previous_completed(records: Records, run_id: str) -> str | None:
    """The newest completed run of the same name that started before this one: what a run is compared with."""
    rows = records(_PREVIOUS, {"run": run_id})
    return str(rows[0]["run_id"]) if rows else None


_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None]) -> str:
    """One character per value, scaled between the smallest and largest; a gap (space) for None."""
    known = [v for v in values if v is not None]
    if not known:
        return " " * len(values)
    low, high = min(known), max(known)
    span = high - low
    top = len(_BARS) - 1
    return "".join(" " if v is None else _BARS[round((v - low) / span * top) if span > 0 else top // 2]
                   for v in values)


def trend_by_scorer(records: Records, run_id: str, last: int = DEFAULT_LAST) -> tuple[int, dict[str, list[float | None]]]:
    """(runs in the trend, scorer id -> its mean in each of them, oldest first; None where it has no mean)."""
    ids = trend_run_ids(records, run_id, last)
    means = {(s.run_id, s.scorer_id): s.mean_score for s in scorer_stats(records, ids)}
    scorers = sorted({scorer for _, scorer in means})
    return len(ids), {scorer: [means.get((rid, scorer)) for rid in ids] for scorer in scorers}
