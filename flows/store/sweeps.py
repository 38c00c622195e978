"""The `sweeps` table and a sweep's runs (`runs.sweep_id`, `candidate`, `sweep_repeat`): record a sweep, name
its runs, find it again (by id, name or `latest`), and read what its leaderboard needs (docs/sweeps.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import duckdb

from evalduck.flows.store.errors import StoreError
from evalduck.flows.store.store import Store
from evalduck.flows.store.upsert import utcnow

__all__ = ("UnknownSweepError", "finish_sweep", "leaderboard_stats", "resolve_sweep", "start_sweep", "sweep_runs",
           "tag_run")


class UnknownSweepError(StoreError, LookupError):
    """A sweep reference (id, name, `latest`) that matches no sweep in the file."""


def start_sweep(store: Store, sweep_id: str, *, name: str, file: str | None, spec: Any, axes: Mapping[str, Any],
                baseline: str, flow_run_id: str | None) -> None:
    """Record the sweep as `running`, or a resumed one as running again."""

    def body(con: duckdb.DuckDBPyConnection) -> None:
        found = con.execute("SELECT count(*) FROM sweeps WHERE sweep_id = ?", [sweep_id]).fetchone()
        if found and found[0]:
            con.execute("UPDATE sweeps SET status = 'running', finished_at = NULL, flow_run_id = coalesce(?, flow_run_id) "
                        "WHERE sweep_id = ?", [flow_run_id, sweep_id])
            return
        con.execute("INSERT INTO sweeps (sweep_id, name, file, spec, axes, baseline, status, started_at, flow_run_id) "
                    "VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?)",
                    [sweep_id, name, file, json.dumps(spec, default=str), json.dumps(axes, default=str), baseline,
                     utcnow(), flow_run_id])

    store.write(body)


def finish_sweep(store: Store, sweep_id: str, status: str) -> None:
    """The sweep's end: `completed` when every run completed, else the status that stopped it."""
    store.write(lambda con: con.execute("UPDATE sweeps SET status = ?, finished_at = ? WHERE sweep_id = ?",
                                        [status, utcnow(), sweep_id]))


def tag_run(store: Store, run_id: str, sweep_id: str, candidate: str, repeat: int) -> None:
    """Name ``run_id`` as run ``repeat`` of ``candidate`` in the sweep."""
    store.write(lambda con: con.execute("UPDATE runs SET sweep_id = ?, candidate = ?, sweep_repeat = ? WHERE run_id = ?",
                                        [sweep_id, candidate, repeat, run_id]))


def resolve_sweep(store: Store, ref: str = "latest") -> dict[str, Any]:
    """The sweep ``ref`` names: `latest`, an id, a unique id prefix, or a name (its newest sweep).

    Raises:
        UnknownSweepError: no sweep matches, with the newest sweeps' names to choose from.
    """
    rows = store.sql("SELECT * FROM sweeps ORDER BY started_at DESC").records()
    found = (rows[:1] if ref == "latest" else [r for r in rows if r["sweep_id"] == ref]
             or [r for r in rows if r["name"] == ref][:1]
             or [r for r in rows if r["sweep_id"].startswith(ref)])
    if len(found) == 1:
        return found[0]
    known = ", ".join(f"{r['name']} ({r['sweep_id'][:8]})" for r in rows[:5]) or "none yet"
    why = f"{len(found)} sweeps' ids start with it" if found else "no sweep has that id or name"
    raise UnknownSweepError(f"{store.path}: sweep {ref!r}: {why}; the newest: {known}")


def sweep_runs(store: Store, sweep_id: str) -> list[dict[str, Any]]:
    """The sweep's runs, oldest first: run id, name, candidate, repeat, status."""
    return store.sql("SELECT run_id, name, candidate, sweep_repeat, status FROM runs WHERE sweep_id = ? "
                     "ORDER BY started_at", [sweep_id]).records()


_CELLS = """
WITH cells AS (
    SELECT r.candidate, s.scorer_id, s.item_id, avg(s.score) AS score
    FROM scores AS s JOIN runs AS r USING (run_id)
    WHERE r.sweep_id = $sweep AND s.status = 'scored'
    GROUP BY ALL
)"""

# Per candidate and scorer: the cells' count, mean and sample SD (an item's score the mean over the candidate's
# repeats, so an item counts once).
_MOMENTS = _CELLS + """
SELECT candidate, scorer_id, count(*) AS n, avg(score) AS mean, stddev_samp(score) AS sd FROM cells GROUP BY ALL
"""

# Per candidate and scorer: the differences from the baseline over the items both scored (candidate minus
# baseline), summed up: count, mean, SD, and how many went up, stayed (within 1e-9), went down.
_PAIRED = _CELLS + """
, diffs AS (
    SELECT c.candidate, c.scorer_id, c.score - b.score AS d
    FROM cells AS c JOIN cells AS b ON b.candidate = $baseline AND b.scorer_id = c.scorer_id AND b.item_id = c.item_id
    WHERE c.candidate <> $baseline
)
SELECT candidate, scorer_id, count(*) AS n, avg(d) AS mean, stddev_samp(d) AS sd,
       count(*) FILTER (WHERE d > 1e-9) AS up, count(*) FILTER (WHERE abs(d) <= 1e-9) AS same,
       count(*) FILTER (WHERE d < -1e-9) AS down
FROM diffs GROUP BY ALL
"""

_USAGE = """
SELECT r.candidate, coalesce(sum(s.prompt_tokens), 0) + coalesce(sum(s.completion_tokens), 0) AS tokens,
       CASE WHEN count(s.cost) = count(s.judge_model) THEN coalesce(sum(s.cost), 0) END AS cost
FROM runs AS r LEFT JOIN scores AS s USING (run_id) WHERE r.sweep_id = $sweep GROUP BY ALL ORDER BY min(r.started_at)
"""


# Per candidate: the target's seconds per item over all its runs (each repeat's answer counts: it was timed).
_LATENCY = """
SELECT r.candidate, list(i.target_latency_s ORDER BY i.target_latency_s) AS latencies
FROM runs AS r JOIN items AS i USING (run_id)
WHERE r.sweep_id = $sweep AND i.target_latency_s IS NOT NULL GROUP BY ALL
"""


def leaderboard_stats(store: Store, sweep_id: str, baseline: str) -> dict[str, Any]:
    """What the leaderboard reads of a sweep, summed up in SQL (flows/report/leaderboard.py's Moments and Paired,
    as rows): ``moments`` (candidate, scorer, n, mean, sd), ``paired`` against ``baseline`` (candidate, scorer, n,
    mean, sd, up, same, down), ``usage`` per candidate in the order they ran (candidate, tokens, cost: None when
    a request had no price), ``latency`` (candidate -> the target's seconds per item) and ``directions``
    (scorer -> higher is better)."""
    args = {"sweep": sweep_id}
    directions = store.sql(
        "SELECT DISTINCT rs.scorer_id, rs.higher_is_better FROM run_scorers AS rs JOIN runs AS r USING (run_id) "
        "WHERE r.sweep_id = ? ORDER BY rs.scorer_id", [sweep_id]).rows
    return {"moments": store.sql(_MOMENTS, args).rows,
            "paired": store.sql(_PAIRED, {**args, "baseline": baseline}).rows,
            "usage": store.sql(_USAGE, args).rows,
            "latency": dict(store.sql(_LATENCY, args).rows),
            "directions": {scorer: bool(higher) for scorer, higher in directions}}
