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

__all__ = ("UnknownSweepError", "finish_sweep", "leaderboard_cells", "resolve_sweep", "start_sweep", "sweep_runs",
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


def leaderboard_cells(store: Store, sweep_id: str) -> tuple[list[dict[str, Any]], dict[str, bool]]:
    """Per candidate and scorer, each item's score (the mean over the candidate's repeats, so an item counts once),
    with the candidate's judge tokens and cost (NULL when a request had no price); and each scorer's direction.
    One query each, over the sweep's runs."""
    cells = store.sql(
        "SELECT r.candidate, s.scorer_id, s.item_id, avg(s.score) AS score FROM scores s "
        "JOIN runs r USING (run_id) WHERE r.sweep_id = ? AND s.status = 'scored' "
        "GROUP BY ALL ORDER BY ALL", [sweep_id]).records()
    usage = store.sql(
        "SELECT r.candidate, coalesce(sum(s.prompt_tokens), 0) + coalesce(sum(s.completion_tokens), 0) AS tokens, "
        "CASE WHEN count(s.cost) = count(s.judge_model) THEN coalesce(sum(s.cost), 0) END AS cost "
        "FROM runs r LEFT JOIN scores s USING (run_id) WHERE r.sweep_id = ? GROUP BY ALL", [sweep_id]).records()
    directions = store.sql(
        "SELECT DISTINCT rs.scorer_id, rs.higher_is_better FROM run_scorers rs JOIN runs r USING (run_id) "
        "WHERE r.sweep_id = ? ORDER BY rs.scorer_id", [sweep_id]).rows
    by_candidate: dict[str, dict[str, Any]] = {}
    for row in usage:
        by_candidate[row["candidate"]] = {"candidate": row["candidate"], "tokens": int(row["tokens"] or 0),
                                          "cost": row["cost"], "scores": {}}
    for row in cells:
        entry = by_candidate.setdefault(row["candidate"], {"candidate": row["candidate"], "tokens": 0, "cost": None,
                                                           "scores": {}})
        entry["scores"].setdefault(row["scorer_id"], {})[row["item_id"]] = row["score"]
    return list(by_candidate.values()), {scorer: bool(higher) for scorer, higher in directions}
