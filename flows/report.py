"""After a run: its summary and comparison artifacts on the Prefect API, and the ``EvalResult`` it returns."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from flows.artifacts import artifact_key, comparison_markdown, publish_comparison, publish_summary, summary_rows
from flows.prepare import Prepared

__all__ = ("EvalResult", "Report", "publish_report", "eval_result")


class EvalResult(BaseModel):
    """What a run returns: ``scores`` are means over scored items; ``summary`` counts every cell."""

    run_id: str
    name: str | None = None
    scores: dict[str, float | None] = Field(description="scorer id -> mean score over scored items")
    summary: dict[str, Any] = Field(description='{"totalItems": n, "scorers": {id: {scored, errored, ...}}}')
    db: str
    status: str = "completed"
    previous_run_id: str | None = None
    comparison: list[dict[str, Any]] | None = None
    flow_run_id: str | None = Field(default=None, description="the Prefect flow run that ran it")


Report = tuple[list[dict[str, Any]], list[dict[str, Any]] | None]  # summary rows, comparison rows


async def publish_report(prepared: Prepared) -> Report:
    """The run's summary (and, with a previous run of its name, the comparison) as artifacts."""
    plan, name, previous = prepared.plan, prepared.plan.options.name, prepared.previous
    rows = summary_rows(plan.store.run_summary(plan.run_id).scorers)
    comparison = plan.store.compare(previous, plan.run_id) if previous else None
    await publish_summary(artifact_key(name, "summary"), rows,
                          f"evalduck run {plan.run_id} ({len(prepared.dataset)} items)")
    if comparison is not None and previous is not None:
        await publish_comparison(artifact_key(name, "comparison"),
                                 comparison_markdown(comparison, previous, plan.run_id, name),
                                 f"run {plan.run_id} vs previous run {previous}")
    return rows, comparison


def eval_result(prepared: Prepared, report: Report, flow_run_id: str | None) -> EvalResult:
    plan = prepared.plan
    rows, comparison = report
    return EvalResult(
        run_id=plan.run_id, name=plan.options.name, scores={r["scorer"]: r["mean"] for r in rows},
        summary={"totalItems": len(prepared.dataset.items),
                 "scorers": {r["scorer"]: {k: v for k, v in r.items() if k != "scorer"} for r in rows}},
        db=str(plan.store.path), previous_run_id=prepared.previous, comparison=comparison, flow_run_id=flow_run_id,
    )
