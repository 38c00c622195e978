"""A stored sweep's leaderboard rows, from its figures summed up in SQL (flows/store/sweeps.py): what the
`evalduck leaderboard` command, the sweep's report and its summary artifact all show."""

from __future__ import annotations

from evalduck.flows.report.leaderboard import CandidateStats, Moments, Paired, Row, leaderboard
from evalduck.flows.store import Store
from evalduck.flows.store.sweeps import leaderboard_stats

__all__ = ("sweep_rows",)


def sweep_rows(store: Store, sweep_id: str, baseline: str, by: str | None = None) -> list[Row]:
    """The sweep's leaderboard against ``baseline`` (its candidate's label), ``by`` a scorer ranked first.

    Raises:
        ValueError: ``by`` names no scorer of the sweep.
    """
    stats = leaderboard_stats(store, sweep_id, baseline)
    moments: dict[str, dict[str, Moments]] = {}
    for candidate, scorer, n, mean, sd in stats["moments"]:
        moments.setdefault(candidate, {})[scorer] = Moments(n=int(n), mean=mean, sd=sd)
    paired: dict[str, dict[str, Paired]] = {}
    for candidate, scorer, n, mean, sd, up, same, down in stats["paired"]:
        paired.setdefault(candidate, {})[scorer] = Paired(n=int(n), mean=mean, sd=sd, up=up, same=same, down=down)
    candidates = [CandidateStats(label=label, baseline=label == baseline, scores=moments.get(label, {}),
                                 paired=paired.get(label, {}), judge_tokens=int(tokens or 0), cost=cost,
                                 latencies=stats["latency"].get(label, ()))
                  for label, tokens, cost in stats["usage"]]
    return leaderboard(candidates, stats["directions"], by=by)
