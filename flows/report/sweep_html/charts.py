"""The sweep report's charts: Vega-Lite specs beside the run report's (flows/report/html/charts/sweep_*.vl.json),
filled with the sweep's figures and drawn as SVG by the run report's drawer (flows/report/html/charts.py: the
warm renderer when one was handed in, else vl-convert in this process). The page carries no chart script."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evalduck.flows.report.html import charts as run_charts
from evalduck.flows.report.leaderboard import Row
from evalduck.flows.report.sweep_html.analysis import Point

__all__ = ("heatmap_svg", "heatmap_values", "scatter_svg", "scatter_values")


def _draw(name: str, values: list[dict[str, Any]], tweak: Any = None) -> str:
    spec = json.loads(run_charts._spec(name))
    spec["data"] = {"values": values}
    if tweak is not None:
        tweak(spec)
    return run_charts._drawer(spec)


def heatmap_values(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """One cell per (candidate, scorer): its oriented delta (None for the baseline, or with no item in common),
    whether it is distinguishable, and its text; candidates in the order of the first scorer's ranking."""
    order = list(dict.fromkeys(r.candidate for r in rows))
    cells = []
    for row in sorted(rows, key=lambda r: order.index(r.candidate)):
        d = row.delta
        text = "baseline" if row.baseline else ("–" if d is None else f"{d.delta:+.3f}")
        cells.append({"candidate": row.candidate, "scorer": row.scorer, "delta": d.delta if d else None,
                      "distinguishable": bool(d and d.distinguishable), "text": text})
    return cells


def heatmap_svg(rows: Sequence[Row]) -> str | None:
    """Candidates x scorers coloured by the oriented delta, hatched where not distinguishable; None without a
    delta to draw."""
    values = heatmap_values(rows)
    largest = max((abs(v["delta"]) for v in values if v["delta"] is not None), default=None)
    if largest is None:
        return None
    bound = largest if largest > 1e-9 else 1.0

    def domain(spec: dict[str, Any]) -> None:
        spec["layer"][1]["encoding"]["color"]["scale"]["domain"] = [-bound, 0, bound]

    return _draw("sweep_heatmap", values, domain)


def scatter_values(points: Sequence[Point], front: Sequence[Point]) -> list[dict[str, Any]]:
    """The candidates' points, those on the front numbered cheapest first (the line's order)."""
    rank = {p.label: i for i, p in enumerate(front)}
    return [{"candidate": p.label, "cost": p.cost, "mean": p.quality, "front": p.label in rank,
             "order": rank.get(p.label)} for p in points]


def scatter_svg(points: Sequence[Point], front: Sequence[Point], scorer: str, direction: str) -> str | None:
    """Cost (x) against the mean on ``scorer`` (y, ``direction`` in its title), the Pareto front drawn; None
    without a point."""
    if not points:
        return None

    def title(spec: dict[str, Any]) -> None:
        spec["encoding"]["y"]["title"] = f"mean {scorer} ({direction})"

    return _draw("sweep_scatter", scatter_values(points, front), title)
