"""After a run: its HTML report (flows/report/html/), its summary and comparison artifacts on the Prefect API,
and the ``EvalResult`` it returns. The report and the artifacts' trend chart are visibility: a failure is logged,
never allowed to fail the run, whose results are all stored by then."""

from __future__ import annotations

import asyncio
import logging
from contextlib import ExitStack
from typing import Any

from pydantic import BaseModel, Field

from evalduck.flows.engine import Executed
from evalduck.flows.report.artifacts import (
    artifact_key,
    comparison_markdown,
    publish_comparison,
    publish_summary,
    summary_description,
    summary_rows,
    summary_table,
)
from evalduck.flows.report.html import WrittenReport
from evalduck.flows.report.noise import noise_by_scorer
from evalduck.flows.run.prepare import Prepared

logger = logging.getLogger("evalduck.report")

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
    report: str | None = Field(default=None, description="the run's HTML report, when one was written")
    cache: list[dict[str, Any]] | None = Field(
        default=None, description="explain_cache: per step {step, hits, misses, why: {what changed: count}}")
    max_cost: float | None = Field(default=None, description="the run's budget in USD (max_cost), when it had one")
    spend: float | None = Field(default=None, description="with a budget: what the run has spent in USD, stored "
                                "cells of a resumed run included (status `budget_exceeded` when it stopped the run)")


# summary rows, comparison rows, the HTML report written
Report = tuple[list[dict[str, Any]], list[dict[str, Any]] | None, WrittenReport | None]


def _ui_url() -> str | None:
    from prefect.settings import get_current_settings

    url = get_current_settings().ui_url
    return str(url).rstrip("/") if url else None


def _html_report(prepared: Prepared) -> WrittenReport | None:
    from evalduck.flows.report.html import write_report

    plan = prepared.plan
    try:
        return write_report(plan.store, plan.run_id, ui_url=_ui_url())
    except Exception as exc:  # noqa: BLE001 - the results are stored; the report can be written later
        logger.warning("run %s: could not write its HTML report (`evalduck report %s` writes it later): %s",
                       plan.run_id, plan.run_id, exc, exc_info=True)
        return None


def _trend_chart(prepared: Prepared) -> str | None:
    """The small trend chart of the summary artifact, as a data: URI; None for a run without earlier runs."""
    from evalduck.flows.report.html import scorer_stats, trend_run_ids
    from evalduck.flows.report.html.charts import small_trend_data_uri
    from evalduck.flows.report.html.reader import store_records

    plan = prepared.plan
    if not plan.options.name:
        return None
    try:
        records = store_records(plan.store)
        ids = trend_run_ids(records, plan.run_id)
        return small_trend_data_uri(scorer_stats(records, ids)) if len(ids) > 1 else None
    except Exception as exc:  # noqa: BLE001
        logger.warning("run %s: could not draw the trend chart: %s", plan.run_id, exc, exc_info=True)
        return None


async def publish_report(prepared: Prepared) -> Report:
    """The run's HTML report (unless switched off) and, with a previous run of its name, the comparison
    artifact; then the summary artifact, linking the report, with the trend over the last runs of its name."""
    plan, name, previous = prepared.plan, prepared.plan.options.name, prepared.previous
    # Its half-dozen reads share one opening of the file (Store.held): each open costs ~25 ms of CPU, and the
    # two threads' reads wait for each other's (docs/benchmarks.md). Opened off the loop: it may wait for a lock.
    with ExitStack() as held:
        await asyncio.to_thread(held.enter_context, plan.store.held())
        # The page is written in a thread beside the artifacts' own reads, chart and requests, which it does
        # not need: the run's end waits for the longer of the two, not for both (docs/benchmarks.md).
        page = asyncio.ensure_future(asyncio.to_thread(_html_report, prepared)) if plan.options.report else None
        try:
            summary = await asyncio.to_thread(plan.store.run_summary, plan.run_id)
            rows = summary_rows(summary.scorers, noise_by_scorer(summary.samples))
            comparison = await asyncio.to_thread(plan.store.compare, previous, plan.run_id) if previous else None
            trend = await asyncio.to_thread(_trend_chart, prepared)
            if comparison is not None and previous is not None:
                await publish_comparison(artifact_key(name, "comparison"),
                                         comparison_markdown(comparison, previous, plan.run_id, name),
                                         f"run {plan.run_id} vs previous run {previous}")
        finally:
            written = await page if page is not None else None  # the summary links it, once it is there
    await publish_summary(artifact_key(name, "summary"), summary_table(rows),
                          summary_description(plan.run_id, len(prepared.dataset), written.path if written else None,
                                              trend, name, db=plan.store.target.path))
    return rows, comparison, written


def eval_result(prepared: Prepared, executed: Executed, report: Report, flow_run_id: str | None) -> EvalResult:
    """What the run returns: its stored results as the report read them, with the status ``execute``
    recorded, and (``explain_cache``) each step's cache hits and misses."""
    plan = prepared.plan
    rows, comparison, written = report
    return EvalResult(
        run_id=plan.run_id, name=plan.options.name, status=executed.status,
        scores={r["scorer"]: r["mean"] for r in rows},
        summary={"totalItems": len(prepared.dataset.items),
                 "scorers": {r["scorer"]: {k: v for k, v in r.items() if k != "scorer"} for r in rows}},
        db=str(plan.store.path), previous_run_id=prepared.previous, comparison=comparison, flow_run_id=flow_run_id,
        report=str(written.path) if written else None, cache=executed.cache if plan.options.explain_cache else None,
        max_cost=plan.options.max_cost, spend=executed.spend,
    )
