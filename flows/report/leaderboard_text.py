"""The leaderboard's rows (flows/report/leaderboard.py) as text for other tools: Markdown (a PR comment, a
wiki page), CSV (a spreadsheet) and JSON (scripts; its ``format`` names the schema's version, docs/sweeps.md).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from evalduck.flows.report.leaderboard import Row

__all__ = ("JSON_FORMAT", "delta_text", "mean_text", "to_csv", "to_json", "to_markdown")

JSON_FORMAT = "evalduck.leaderboard/1"

_CSV_COLUMNS = ("scorer", "candidate", "baseline", "best", "n", "mean", "mean_low", "mean_high", "delta",
                "delta_low", "delta_high", "delta_level", "p", "p_holm", "distinguishable", "wins", "ties", "losses",
                "judge_tokens", "cost", "cost_per_point", "latency_p50", "latency_p95")


def _num(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _flat(row: Row) -> dict[str, Any]:
    d = row.delta
    return {
        "scorer": row.scorer, "candidate": row.candidate, "baseline": row.baseline, "best": row.best, "n": row.n,
        "mean": row.mean, "mean_low": row.low, "mean_high": row.high,
        "delta": d.delta if d else None, "delta_low": d.low if d else None, "delta_high": d.high if d else None,
        "delta_level": d.level if d else None, "p": d.p if d else None, "p_holm": d.p_holm if d else None,
        "distinguishable": d.distinguishable if d else None, "wins": d.wins if d else None,
        "ties": d.ties if d else None, "losses": d.losses if d else None, "judge_tokens": row.judge_tokens,
        "cost": row.cost, "cost_per_point": row.cost_per_point, "latency_p50": row.latency_p50,
        "latency_p95": row.latency_p95,
    }


def to_csv(rows: Sequence[Row]) -> str:
    """One line per (scorer, candidate), every figure unrounded; empty where there is none."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=_CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in _flat(row).items()})
    return out.getvalue()


def to_json(rows: Sequence[Row], **about: Any) -> str:
    """``{"format": JSON_FORMAT, ...about, "rows": [...]}``: each row's figures and its delta as an object."""
    return json.dumps({"format": JSON_FORMAT, **about, "rows": [
        {**{k: v for k, v in asdict(row).items() if k != "delta"},
         "delta": None if row.delta is None else {**asdict(row.delta), "distinguishable": row.delta.distinguishable}}
        for row in rows]}, indent=2)


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def mean_text(row: Row, missing: str = "") -> str:
    """``0.812 [0.790, 0.834]``: the mean and its 95% interval; ``missing`` when the candidate has no score."""
    if row.mean is None:
        return missing
    return f"{_num(row.mean)} [{_num(row.low)}, {_num(row.high)}]" if row.low is not None else _num(row.mean)


def delta_text(row: Row) -> str:
    """``+0.041 [0.012, 0.070]``, ``... not distinguishable``, ``baseline`` or ``no item in common``."""
    d = row.delta
    if row.baseline:
        return "baseline"
    if d is None:
        return "no item in common"
    interval = f" [{_num(d.low)}, {_num(d.high)}]" if d.low is not None and d.high is not None else ""
    verdict = "" if d.distinguishable else " not distinguishable"
    return f"{d.delta:+.3f}{interval}{verdict}"


def to_markdown(rows: Sequence[Row]) -> str:
    """A table per scorer, best first; deltas are oriented (positive is better) with Holm-adjusted intervals."""
    parts = []
    for scorer in dict.fromkeys(r.scorer for r in rows):
        parts.append(f"### {_cell(scorer)}\n")
        parts.append("| | candidate | mean [95% CI] | delta vs baseline [Holm CI] | win / tie / loss | judge tokens "
                     "| cost | cost per point | latency p50 / p95 (s) |")
        parts.append("|---|---|---|---|---|---|---|---|---|")
        for row in (r for r in rows if r.scorer == scorer):
            wtl = f"{row.delta.wins} / {row.delta.ties} / {row.delta.losses}" if row.delta else ""
            cost = "unknown" if row.cost is None else f"${row.cost:.4f}"
            per_point = "" if row.cost_per_point is None else f"${row.cost_per_point:.4f}"
            latency = f"{_num(row.latency_p50, 2)} / {_num(row.latency_p95, 2)}" if row.latency_p50 is not None else ""
            parts.append(f"| {'best' if row.best else ''} | {_cell(row.candidate)} | {mean_text(row)} | {delta_text(row)} "
                         f"| {wtl} | {row.judge_tokens:,} | {cost} | {per_point} | {latency} |")
        parts.append("")
    return "\n".join(parts)
