"""Everything a report shows, read from the store in a few queries: the run's header, per-scorer stats, the
trend, the comparison with its most-moved items, and the item table's rows.

Statistics are never computed here: means, intervals and paired deltas come from the store's SQL
(`run_scorer_summary` + `t975` through stats.py, `compare_runs`, `item_deltas`); histograms are binned by
the chart library from the scores themselves.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from evalduck.flows.report.html.direction import scorer_directions
from evalduck.flows.report.html.reader import Records, one_connection
from evalduck.flows.report.html.stats import DEFAULT_LAST, ScorerStats, previous_completed, scorer_stats, trend_run_ids
from evalduck.flows.report.judges import changed_judges
from evalduck.flows.report.measures import measures_line, scorer_descriptions
from evalduck.flows.report.noise import JudgeNoise, noise_by_scorer
from evalduck.flows.store import RunRecord, Store
from evalduck.flows.store.queries import SAMPLES_SQL, json_value, samples_by_scorer

__all__ = ("MOVED_ITEMS", "Header", "ScorerSection", "MovedItem", "ScorerComparison", "ReportData", "gather")

MOVED_ITEMS = 5  # per scorer, the items whose score moved most against the baseline

# The item table as one JSON text, built by DuckDB from the stored JSON columns without parsing them in Python
# (parsing them was most of a large report's time: docs/benchmarks-history.md, 'HTML report'):
# [[item id, input, output, ground truth, [cell per scorer]], ...]
# with a cell [status, score, reason, error, {"preprocess": ..., "analyze": ...}], or null where none.
_ITEMS = """
WITH scorer AS (SELECT DISTINCT scorer_id FROM scores WHERE run_id = $run),
cells AS (
    SELECT i.item_id,
           list(CASE WHEN s.status IS NULL THEN NULL ELSE json_array(s.status, s.score, s.reason, s.error,
                json_object('preprocess', s.preprocess_step_result, 'analyze', s.analyze_step_result)) END
                ORDER BY g.scorer_id) AS cells
    FROM items AS i CROSS JOIN scorer AS g
    LEFT JOIN scores AS s ON s.run_id = $run AND s.item_id = i.item_id AND s.scorer_id = g.scorer_id
    WHERE i.run_id = $run
    GROUP BY i.item_id)
SELECT (SELECT list(scorer_id ORDER BY scorer_id) FROM scorer) AS scorer_ids,
       coalesce(to_json(list(json_array(i.item_id, i.input, i.output, i.ground_truth, coalesce(c.cells, []))
                        ORDER BY i.item_id)), '[]') AS items
FROM items AS i LEFT JOIN cells AS c ON c.item_id = i.item_id
WHERE i.run_id = $run
"""

_SCORES = "SELECT scorer_id, list(score) AS scores FROM scores WHERE run_id = $run AND score IS NOT NULL GROUP BY scorer_id"

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


class Header(BaseModel):
    """The report's top: the run, its target, judges, tokens, cost and duration, and its flow run's page."""

    run: RunRecord
    target: str | None
    judge_models: list[str]
    judge_tokens: int
    cost: float | None
    duration_s: float | None
    flow_run_url: str | None


class ScorerSection(BaseModel):
    """One scorer's part of the report: its stats, direction, scored cells and what it measures."""

    stats: ScorerStats
    higher_is_better: bool
    scores: list[float]  # the scored cells, for the histogram
    measures: str  # what it measures and which way is better (flows/report/measures.py)


class MovedItem(BaseModel):
    """An item whose score moved most between the compared runs, with both runs' output and reason."""

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
    """One scorer's comparison with the other run: the `compare_runs` row and the most-moved items."""

    row: dict[str, Any]  # compare_runs' row: means, mean paired delta, interval, counts, warning
    higher_is_better: bool
    moved: list[MovedItem]


class ReportData(BaseModel):
    """Everything one report shows (module docstring), gathered before the page is rendered."""

    header: Header
    scorers: list[ScorerSection]
    trend_runs: list[RunRecord]
    trend: list[ScorerStats]
    against: RunRecord | None
    comparison: list[ScorerComparison]
    skipped: list[dict[str, Any]]  # Store.skipped_reasons: scorer id, reason, cells (what `evalduck show` lists)
    scorer_ids: list[str]
    items_json: str  # the item table (see _ITEMS), as JSON text
    generated_at: datetime
    noise: dict[str, JudgeNoise] = {}  # per scorer judged more than once a cell (flows/report/noise.py)
    judge_changes: list[str] = []  # a judge scorer whose judge differs from the baseline's (flows/report/judges.py)


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
        (table,) = records(_ITEMS, {"run": run_id})
        scores = {r["scorer_id"]: r["scores"] for r in records(_SCORES, {"run": run_id})}
        comparison = _comparison(records, baseline_id, run_id, directions) if baseline_id is not None else []
        samples = samples_by_scorer((r["scorer_id"], r["scores"]) for r in records(SAMPLES_SQL, {"run": run_id}))
    own = [s for s in trend if s.run_id == run_id]
    changes = changed_judges(store, baseline_id, run_id, {s.scorer_id for s in own}) if baseline_id else []
    skipped = store.skipped_reasons(run_id) if any(s.n_skipped for s in own) else []
    described = scorer_descriptions(runs[run_id].config)
    return ReportData(
        header=_header(runs[run_id], own, ui_url),
        scorers=[ScorerSection(stats=s, higher_is_better=directions.get(s.scorer_id, True),
                               scores=scores.get(s.scorer_id, []),
                               measures=measures_line(described.get(s.scorer_id, ""), directions.get(s.scorer_id, True)))
                 for s in own],
        trend_runs=[runs[i] for i in trend_ids], trend=trend,
        against=runs[baseline_id] if baseline_id else None, comparison=comparison, skipped=skipped,
        scorer_ids=table["scorer_ids"] or [], items_json=str(table["items"]), generated_at=datetime.now().astimezone(),
        noise=noise_by_scorer(samples), judge_changes=changes,
    )


def _runs(records: Records, run_ids: list[str]) -> dict[str, RunRecord]:
    rows = records("SELECT * FROM run_overview WHERE list_contains(?, run_id)", [sorted(set(run_ids))])
    return {r["run_id"]: RunRecord.model_validate({**r, "config": json_value(r["config"])}) for r in rows}


def _header(record: RunRecord, own: list[ScorerStats], ui_url: str | None) -> Header:
    config = record.config if isinstance(record.config, dict) else {}
    costs = [s.cost for s in own if s.cost is not None]
    models = sorted({m for s in own if s.judge_model for m in s.judge_model.split(",")})
    duration = (record.finished_at - record.started_at).total_seconds() if record.finished_at else None
    url = f"{ui_url.rstrip('/')}/runs/flow-run/{record.flow_run_id}" if ui_url and record.flow_run_id else None
    return Header(run=record, target=config.get("target"), judge_models=models,
                  judge_tokens=sum(s.judge_tokens for s in own), cost=sum(costs) if costs else None,
                  duration_s=duration, flow_run_url=url)


def _comparison(records: Records, a: str, b: str, directions: dict[str, bool]) -> list[ScorerComparison]:
    out = []
    for row in records("SELECT * FROM compare_runs(?, ?)", [a, b]):
        scorer = row["scorer_id"]
        better = directions.get(scorer, True)
        moved = [
            MovedItem(
                item_id=m["item_id"], moved="improved" if (m["delta"] > 0) == better else "regressed",
                delta=m["delta"], score_a=m["score_a"], score_b=m["score_b"], input=json_value(m["input"]),
                output_a=json_value(m["output_a"]), output_b=json_value(m["output_b"]), reason_a=m["reason_a"],
                reason_b=m["reason_b"],
                steps_a=_steps(m["preprocess_a"], m["analyze_a"]), steps_b=_steps(m["preprocess_b"], m["analyze_b"]),
            )
            for m in records(_MOVED, {"a": a, "b": b, "scorer": scorer, "limit": MOVED_ITEMS})
        ]
        out.append(ScorerComparison(row=row, higher_is_better=better, moved=moved))
    return out


def _steps(preprocess: Any, analyze: Any) -> dict[str, Any]:
    return {k: v for k, v in (("preprocess", json_value(preprocess)), ("analyze", json_value(analyze))) if v is not None}
