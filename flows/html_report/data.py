"""Everything a report shows, read from the store in a few queries: the run's header, per-scorer stats, the
trend, the comparison with its most-moved items, and the item table's rows.

Statistics are never computed here: means, intervals and paired deltas come from the store's SQL
(`run_scorer_summary` + `t975` through stats.py, `compare_runs`, `item_deltas`); histograms are binned by
the chart library from the scores themselves.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from flows.html_report.direction import scorer_directions
from flows.html_report.reader import Records, one_connection
from flows.html_report.stats import DEFAULT_LAST, ScorerStats, previous_completed, scorer_stats, trend_run_ids
from flows.store import RunRecord, Store

__all__ = ("MOVED_ITEMS", "Header", "ScorerSection", "MovedItem", "ScorerComparison", "ReportData", "gather")

MOVED_ITEMS = 5  # per scorer, the items whose score moved most against the baseline

_CELLS = """
SELECT i.item_id, i.input, i.output, i.ground_truth, s.scorer_id, s.status, s.score, s.reason, s.error,
       s.preprocess_step_result, s.analyze_step_result
FROM items AS i LEFT JOIN scores AS s ON s.run_id = i.run_id AND s.item_id = i.item_id
WHERE i.run_id = $run
ORDER BY i.item_id, s.scorer_id
"""

_MOVED = """
SELECT d.item_id, d.score_a, d.score_b, d.delta, d.status_a, d.status_b, d.reason_a, d.reason_b, d.error, d.input,
       ia.output AS output_a, ib.output AS output_b,
       sa.preprocess_step_result AS preprocess_a, sa.analyze_step_result AS analyze_a,
       sb.preprocess_step_result AS preprocess_b, sb.analyze_step_result AS analyze_b
FROM item_deltas($a, $b, $scorer) AS d
LEFT JOIN items AS ia ON ia.run_id = $a AND ia.item_id = d.item_id
LEFT JOIN items AS ib ON ib.run_id = $b AND ib.item_id = d.item_id
LEFT JOIN scores AS sa ON sa.run_id = $a AND sa.item_id = d.item_id AND sa.scorer_id = $scorer
LEFT JOIN scores AS sb ON sb.run_id = $b AND sb.item_id = d.item_id AND sb.scorer_id = $scorer
WHERE d.delta IS NOT NULL AND abs(d.delta) > 1e-9
ORDER BY abs(d.delta) DESC, d.item_id
LIMIT $limit
"""


def _json(value: Any) -> Any:
    """A JSON column as stored (DuckDB hands JSON back as text)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class Header(BaseModel):
    run: RunRecord
    target: str | None
    judge_models: list[str]
    judge_tokens: int
    cost: float | None
    duration_s: float | None
    flow_run_url: str | None


class ScorerSection(BaseModel):
    stats: ScorerStats
    higher_is_better: bool
    scores: list[float]  # the scored cells, for the histogram


class MovedItem(BaseModel):
    item_id: str
    moved: str  # "improved" or "regressed", by the scorer's direction
    delta: float
    score_a: float | None
    score_b: float | None
    input: Any
    output_a: Any
    output_b: Any
    reason_a: str | None
    reason_b: str | None
    steps_a: dict[str, Any]
    steps_b: dict[str, Any]


class ScorerComparison(BaseModel):
    row: dict[str, Any]  # compare_runs' row: means, mean paired delta, interval, counts, warning
    higher_is_better: bool
    moved: list[MovedItem]


class ReportData(BaseModel):
    header: Header
    scorers: list[ScorerSection]
    trend_runs: list[RunRecord]
    trend: list[ScorerStats]
    against: RunRecord | None
    comparison: list[ScorerComparison]
    scorer_ids: list[str]
    items: list[list[Any]]  # [item id, input, output, ground truth, [cell per scorer_ids or None]]
    generated_at: datetime


def gather(
    store: Store, run: str, *, against: str | None = None, compare_previous: bool = True, last: int = DEFAULT_LAST,
    ui_url: str | None = None,
) -> ReportData:
    """The report of ``run`` (any reference). ``against`` is the baseline (any reference); without it the
    previous completed run of the same name, unless ``compare_previous`` is false."""
    run_id = store.resolve_run(run)
    baseline_id = store.resolve_run(against) if against else None
    with one_connection(store) as records:
        if baseline_id is None and compare_previous:
            baseline_id = previous_completed(records, run_id)
        directions = scorer_directions(records, run_id)
        trend_ids = trend_run_ids(records, run_id, last)
        runs = _runs(records, [*trend_ids, run_id, *([baseline_id] if baseline_id else [])])
        trend = scorer_stats(records, trend_ids)
        scorer_ids, items, scores = _items(records, run_id)
        comparison = _comparison(records, baseline_id, run_id, directions) if baseline_id is not None else []
    own = [s for s in trend if s.run_id == run_id]
    return ReportData(
        header=_header(runs[run_id], own, ui_url),
        scorers=[ScorerSection(stats=s, higher_is_better=directions.get(s.scorer_id, True),
                               scores=scores.get(s.scorer_id, [])) for s in own],
        trend_runs=[runs[i] for i in trend_ids], trend=trend,
        against=runs[baseline_id] if baseline_id else None, comparison=comparison,
        scorer_ids=scorer_ids, items=items, generated_at=datetime.now().astimezone(),
    )


def _runs(records: Records, run_ids: list[str]) -> dict[str, RunRecord]:
    rows = records("SELECT * FROM run_overview WHERE list_contains(?, run_id)", [sorted(set(run_ids))])
    return {r["run_id"]: RunRecord.model_validate({**r, "config": _json(r["config"])}) for r in rows}


def _header(record: RunRecord, own: list[ScorerStats], ui_url: str | None) -> Header:
    config = record.config if isinstance(record.config, dict) else {}
    costs = [s.cost for s in own if s.cost is not None]
    models = sorted({m for s in own if s.judge_model for m in s.judge_model.split(",")})
    duration = (record.finished_at - record.started_at).total_seconds() if record.finished_at else None
    url = f"{ui_url.rstrip('/')}/runs/flow-run/{record.flow_run_id}" if ui_url and record.flow_run_id else None
    return Header(run=record, target=config.get("target"), judge_models=models,
                  judge_tokens=sum(s.judge_tokens for s in own), cost=sum(costs) if costs else None,
                  duration_s=duration, flow_run_url=url)


def _items(records: Records, run_id: str) -> tuple[list[str], list[list[Any]], dict[str, list[float]]]:
    """The item table: one row per item with one cell per scorer ([status, score, reason, error, steps])."""
    rows = [tuple(r.values()) for r in records(_CELLS, {"run": run_id})]
    scorer_ids = sorted({r[4] for r in rows if r[4] is not None})
    column = {s: k for k, s in enumerate(scorer_ids)}
    items: list[list[Any]] = []
    by_id: dict[str, list[Any]] = {}
    scores: dict[str, list[float]] = {s: [] for s in scorer_ids}
    for item_id, input_, output, truth, scorer, status, score, reason, error, pre, analyze in rows:
        item = by_id.get(item_id)
        if item is None:
            item = by_id[item_id] = [item_id, _json(input_), _json(output), _json(truth), [None] * len(scorer_ids)]
            items.append(item)
        if scorer is None:
            continue
        steps = {k: v for k, v in (("preprocess", _json(pre)), ("analyze", _json(analyze))) if v is not None}
        item[4][column[scorer]] = [status, score, reason, error, steps]
        if score is not None:
            scores[scorer].append(score)
    return scorer_ids, items, scores


def _comparison(records: Records, a: str, b: str, directions: dict[str, bool]) -> list[ScorerComparison]:
    out = []
    for row in records("SELECT * FROM compare_runs(?, ?)", [a, b]):
        scorer = row["scorer_id"]
        better = directions.get(scorer, True)
        moved = [
            MovedItem(
                item_id=m["item_id"], moved="improved" if (m["delta"] > 0) == better else "regressed",
                delta=m["delta"], score_a=m["score_a"], score_b=m["score_b"], input=_json(m["input"]),
                output_a=_json(m["output_a"]), output_b=_json(m["output_b"]), reason_a=m["reason_a"],
                reason_b=m["reason_b"],
                steps_a=_steps(m["preprocess_a"], m["analyze_a"]), steps_b=_steps(m["preprocess_b"], m["analyze_b"]),
            )
            for m in records(_MOVED, {"a": a, "b": b, "scorer": scorer, "limit": MOVED_ITEMS})
        ]
        out.append(ScorerComparison(row=row, higher_is_better=better, moved=moved))
    return out


def _steps(preprocess: Any, analyze: Any) -> dict[str, Any]:
    return {k: v for k, v in (("preprocess", _json(preprocess)), ("analyze", _json(analyze))) if v is not None}
