"""Everything a sweep's report shows, read from the store: the sweep's record and runs, its leaderboard rows
(flows/report/sweep_board.py, the figures `evalduck leaderboard` prints), and what the charts and the marginal
effects are drawn from. Nothing here writes a file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from evalduck.flows.report.leaderboard import Row
from evalduck.flows.report.sweep_board import sweep_rows
from evalduck.flows.report.sweep_html.analysis import Marginal, Point, marginal_effects, pareto_front
from evalduck.flows.store import Store
from evalduck.flows.store.sweeps import resolve_sweep

__all__ = ("CandidateRun", "SweepData", "SweepHeader", "gather_sweep", "sweep_record")

_RUNS = """
SELECT o.run_id, o.name, o.dataset, o.dataset_hash, o.n_items, o.status, o.started_at, r.candidate, r.sweep_repeat
FROM run_overview AS o JOIN runs AS r USING (run_id)
WHERE r.sweep_id = ? ORDER BY o.started_at, o.run_id
"""
_DIRECTIONS = ("SELECT DISTINCT rs.scorer_id, rs.higher_is_better FROM run_scorers AS rs JOIN runs AS r USING (run_id) "
               "WHERE r.sweep_id = ?")


@dataclass(frozen=True)
class CandidateRun:
    """One run of a candidate, and where its report is (relative to the sweep's page; None: none written)."""

    run_id: str
    name: str | None
    candidate: str
    repeat: int
    status: str
    href: str | None = None


@dataclass(frozen=True)
class SweepHeader:
    """The page's top: the sweep's record, its datasets and its flow run's page in the Prefect UI."""

    sweep_id: str
    name: str
    status: str
    baseline: str
    file: str | None
    started_at: datetime | None
    finished_at: datetime | None
    flow_run_id: str | None
    flow_run_url: str | None
    datasets: list[str]  # "<dataset> (<n> items, hash <12 digits>)", one per distinct dataset of its runs
    axes: dict[str, list[Any]]


@dataclass(frozen=True)
class SweepData:
    """What one sweep report shows (module docstring)."""

    header: SweepHeader
    rows: list[Row]
    scorers: list[str]  # in the leaderboard's order (the ranked scorer first)
    directions: dict[str, bool]  # scorer -> higher is better
    runs: list[CandidateRun]
    marginals: list[Marginal]
    quality_scorer: str | None  # the scatter's y
    points: list[Point]  # candidates with a known cost and a mean on quality_scorer
    front: list[Point]
    generated_at: datetime = field(default_factory=lambda: datetime.now().astimezone())


def sweep_record(store: Store, sweep: str | Mapping[str, Any]) -> dict[str, Any]:
    """The `sweeps` row of ``sweep``: a reference (id, id prefix, name, `latest`) or the row itself."""
    return dict(sweep) if isinstance(sweep, Mapping) else resolve_sweep(store, sweep)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _datasets(runs: list[dict[str, Any]]) -> list[str]:
    seen = dict.fromkeys((r["dataset"], r["dataset_hash"], r["n_items"]) for r in runs)
    return [f"{name or '–'} ({n} items, hash {(digest or '–')[:12]})" for name, digest, n in seen]


def _header(record: Mapping[str, Any], runs: list[dict[str, Any]], ui_url: str | None) -> SweepHeader:
    flow_run = record.get("flow_run_id")
    axes = _json(record.get("axes")) or {}
    return SweepHeader(
        sweep_id=record["sweep_id"], name=record["name"], status=record["status"], baseline=record["baseline"],
        file=record.get("file"), started_at=record.get("started_at"), finished_at=record.get("finished_at"),
        flow_run_id=flow_run, flow_run_url=f"{ui_url.rstrip('/')}/runs/flow-run/{flow_run}" if ui_url and flow_run else None,
        datasets=_datasets(runs), axes={str(k): list(v) for k, v in axes.items()})


def _scatter(rows: list[Row], scorer: str | None, higher: bool) -> tuple[list[Point], list[Point]]:
    points = [Point(label=r.candidate, cost=r.cost, quality=r.mean) for r in rows
              if r.scorer == scorer and r.cost is not None and r.mean is not None]
    return points, pareto_front(points, higher)


def gather_sweep(store: Store, sweep: str | Mapping[str, Any], *, by: str | None = None,
                 ui_url: str | None = None) -> SweepData:
    """The report of ``sweep`` (a reference or its `sweeps` row), ranked by ``by`` (a scorer) first.

    Raises:
        UnknownSweepError: no sweep matches the reference.
        ValueError: ``by`` names no scorer of the sweep.
    """
    record = sweep_record(store, sweep)
    sweep_id, baseline = record["sweep_id"], record["baseline"]
    rows = sweep_rows(store, sweep_id, baseline, by)
    directions = {str(s): bool(h) for s, h in store.sql(_DIRECTIONS, [sweep_id]).rows if h is not None}
    runs = store.sql(_RUNS, [sweep_id]).records()
    header = _header(record, runs, ui_url)
    scorers = list(dict.fromkeys(r.scorer for r in rows))
    spec = _json(record.get("spec")) or {}
    means = {(r.candidate, r.scorer): r.mean for r in rows}
    marginals = marginal_effects(header.axes, {str(c): dict(v) for c, v in spec.items() if isinstance(v, Mapping)},
                                 means, scorers) if header.axes else []
    chosen = scorers[0] if scorers else None
    points, front = _scatter(rows, chosen, directions.get(chosen, True) if chosen else True)
    return SweepData(
        header=header, rows=rows, scorers=scorers, directions=directions,
        runs=[CandidateRun(run_id=r["run_id"], name=r["name"], candidate=r["candidate"], repeat=int(r["sweep_repeat"] or 0),
                           status=r["status"]) for r in runs],
        marginals=marginals, quality_scorer=chosen, points=points, front=front)
