"""The report's charts: Vega-Lite specs (package data, charts/*.vl.json) filled with the run's data and drawn
as SVG by vl-convert-python, at write time. The page carries no chart script (docs/architecture.md: why).

vl-convert holds the GIL while it draws, and its first call in a process starts its JavaScript runtime (seconds;
later calls a fraction of one: docs/benchmarks-history.md, 'Charts of forked runs drawn by the warm renderer'). One
call per chart kind, scorers as facets. Whoever has a cheaper way to draw hands it in with ``use_drawer`` (a run
forked by the warm starter: the folder's renderer, flows/local/warm/renderer.py), so that the report knows no
process plumbing."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from evalduck.flows.report.html.stats import ScorerStats

__all__ = ("Drawer", "draw_in_process", "use_drawer", "histograms_svg", "trend_svg", "deltas_svg",
           "small_trend_data_uri", "run_label")

Drawer = Callable[[dict[str, Any]], str]  # a Vega-Lite spec -> its SVG


@cache
def _spec(name: str) -> str:
    return (resources.files("evalduck.flows.report.html") / "charts" / f"{name}.vl.json").read_text(encoding="utf-8")


def draw_in_process(spec: dict[str, Any]) -> str:
    """A Vega-Lite spec as SVG, by vl-convert in this process (the default drawer; see ``use_drawer``)."""
    import vl_convert

    return str(vl_convert.vegalite_to_svg(spec))


_drawer: Drawer = draw_in_process


def use_drawer(draw: Drawer | None) -> None:
    """Draw this process's charts with ``draw`` (None: here, with vl-convert)."""
    global _drawer
    _drawer = draw or draw_in_process


def _draw(name: str, values: list[dict[str, Any]]) -> str:
    spec = json.loads(_spec(name))
    spec["data"] = {"values": values}
    return _drawer(spec)


def run_label(run_id: str, started_at: Any) -> str:
    """A run on a chart axis: its start (month-day hour:minute) and the first 8 characters of its id."""
    when = started_at.strftime("%m-%d %H:%M") if started_at is not None else "?"
    return f"{when} {run_id[:8]}"


def histograms_svg(scores: dict[str, Sequence[float]]) -> str | None:
    """One histogram per scorer of its scored cells; None when nothing was scored."""
    values = [{"scorer": scorer, "score": s} for scorer, column in scores.items() for s in column]
    return _draw("histograms", values) if values else None


def _trend_values(trend: Sequence[ScorerStats], labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """``labels``: a scorer's facet title where it is not its id (a lower-is-better scorer says so: its line
    rising is the worse way)."""
    labels = labels or {}
    order: dict[str, int] = {}
    for s in trend:
        order.setdefault(s.run_id, len(order))
    return [{"scorer": labels.get(s.scorer_id, s.scorer_id), "run": run_label(s.run_id, s.started_at), "order": order[s.run_id],
             "mean": s.mean_score, "low": s.ci_low, "high": s.ci_high}
            for s in trend if s.mean_score is not None]


def trend_svg(trend: Sequence[ScorerStats], labels: Mapping[str, str] | None = None) -> str | None:
    """Each scorer's mean over the recent runs; None for a single run, where there is no trend to draw."""
    values = _trend_values(trend, labels)
    return _draw("trend", values) if len({v["order"] for v in values}) > 1 else None


def deltas_svg(rows: Sequence[dict[str, Any]]) -> str | None:
    """``rows``: {scorer, delta, low, high, better} with better one of better / worse / no change."""
    values = [r for r in rows if r.get("delta") is not None]
    return _draw("deltas", values) if values else None


def small_trend_data_uri(trend: Sequence[ScorerStats]) -> str | None:
    """The artifact's small trend chart as a data: URI (the Prefect UI draws it: docs/architecture.md)."""
    values = _trend_values(trend)
    if len({v["order"] for v in values}) < 2:
        return None
    svg = _draw("trend_small", values)
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
