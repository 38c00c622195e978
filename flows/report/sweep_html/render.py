"""SweepData and its charts into one self-contained HTML page, with the run report's template engine, helpers
and stylesheet (flows/report/html/render.py: user text autoescaped, control characters shown as escapes): the
template is package data beside the run report's (flows/report/html/templates/sweep.html.j2). The page has no
script at all, and its Content-Security-Policy lets it load nothing."""

from __future__ import annotations

from typing import Any

from evalduck.flows.report.html.direction import direction_label
from evalduck.flows.report.html.render import _asset, _environment
from evalduck.flows.report.leaderboard import Row
from evalduck.flows.report.sweep_html.charts import heatmap_svg, scatter_svg
from evalduck.flows.report.sweep_html.data import CandidateRun, SweepData

__all__ = ("render_sweep_html",)


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def _blocks(data: SweepData) -> list[dict[str, Any]]:
    """The leaderboard scorer by scorer, its rows best first (as sweep_rows ordered them)."""
    blocks = []
    for scorer in data.scorers:
        rows: list[Row] = [r for r in data.rows if r.scorer == scorer]
        blocks.append({"scorer": scorer, "higher": data.directions.get(scorer, True), "rows": rows,
                       "latency": any(r.latency_p50 is not None for r in rows)})
    return blocks


def _marginal_tables(data: SweepData) -> list[dict[str, Any]]:
    """Per axis: its values in order, each with its mean (and candidate count) per scorer."""
    tables: dict[str, dict[str, dict[str, Any]]] = {}
    for m in data.marginals:
        tables.setdefault(m.axis, {}).setdefault(m.value, {})[m.scorer] = m
    return [{"axis": axis, "values": [{"value": value, "cells": cells} for value, cells in values.items()]}
            for axis, values in tables.items()]


def _runs_by_candidate(data: SweepData) -> dict[str, list[CandidateRun]]:
    order = list(dict.fromkeys(r.candidate for r in data.rows))
    grouped: dict[str, list[CandidateRun]] = {c: [] for c in order}
    for run in data.runs:
        grouped.setdefault(run.candidate, []).append(run)
    return grouped


def render_sweep_html(data: SweepData) -> str:
    """The sweep's page: the charts drawn now as SVG, the template filled, nothing fetched when it opens."""
    chosen = data.quality_scorer
    charts = {
        "heatmap": heatmap_svg(data.rows),
        "scatter": scatter_svg(data.points, data.front, chosen, direction_label(data.directions.get(chosen, True)))
        if chosen else None,
    }
    return _environment().get_template("sweep.html.j2").render(
        h=data.header, blocks=_blocks(data), scorers=data.scorers, directions=data.directions, charts=charts,
        chosen=chosen, front=data.front, points=data.points, marginals=_marginal_tables(data),
        runs=_runs_by_candidate(data), generated_at=data.generated_at, css=_asset("report.css"), p=_p,
    )
