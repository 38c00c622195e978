"""A sweep as a Prefect flow: the parent flow run of its candidates' eval runs, each a subflow run of
``run_eval_config`` (the Prefect UI shows the sweep with its runs under it), recorded in the `sweeps` table and
each run named in it (docs/sweeps.md).

The runs go one after another, each with the sweep's ``concurrency`` and ``judge_rpm``, so the sweep never
has more items in flight, nor sends more requests a minute, than one run of it would; they share the step
cache, so a candidate that repeats another's target outputs or judge steps pays for them once; every run
scores the items in the dataset's order. ``resume`` finishes a sweep that stopped: its completed runs are
kept, a run that stopped part-way is resumed (only its missing cells run), the runs it never began are run.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from prefect.context import FlowRunContext
from pydantic import BaseModel, Field

import evalduck.flows.eval_flow as eval_flow
from evalduck.flows.inputs.sweeps import Candidate, Sweep, load_sweep
from evalduck.flows.project.defaults import default_db_path
from evalduck.flows.report.sweep_artifact import publish_sweep_summary, write_sweep_report_logged
from evalduck.flows.run.redacting_flow import redacting_flow
from evalduck.flows.store import Store
from evalduck.flows.store.sweeps import finish_sweep, resolve_sweep, start_sweep, sweep_runs, tag_run

__all__ = ("SweepResult", "SweepRun", "run_name", "run_sweep")


class SweepRun(BaseModel):
    """One run of a sweep: which candidate, which repeat, its run id and how it ended."""

    candidate: str
    repeat: int
    run_id: str
    status: str
    name: str
    scores: dict[str, float | None] = Field(default_factory=dict)
    kept: bool = False  # completed by an earlier attempt of the sweep (resume): not run again


class SweepResult(BaseModel):
    """What a sweep returns: its id, its baseline's label and every run (candidate by candidate)."""

    sweep_id: str
    name: str
    baseline: str
    db: str
    status: str
    runs: list[SweepRun]
    report: str | None = None  # the sweep's HTML report (None: base `report: false`, or it could not be written)


def run_name(sweep: Sweep, candidate: Candidate, repeat: int) -> str:
    """``<sweep>/<candidate label>``, ``#2``... for repeats: how the run shows in `evalduck runs` and the UI."""
    return f"{sweep.name}/{candidate.label}" + (f" #{repeat + 1}" if sweep.repeat > 1 else "")


def _db(sweep: Sweep, db: str | None) -> str:
    return str(db or sweep.candidates[0].config.db or default_db_path())


@redacting_flow(name="run-sweep", persist_result=False, log_prints=False)
def run_sweep(sweep_file: str, name: str | None = None, resume: str | None = None, db: str | None = None) -> SweepResult:
    """Run every candidate of a sweep file, one eval run each, as subflow runs of this one.

    Args:
        sweep_file: The sweep file (docs/sweeps.md), relative to the working directory.
        name: The sweep's name (default: the file's `name:`, else its stem); its runs are named after it.
        resume: A sweep (id, name or `latest`) to finish: only its missing runs and cells are computed.
        db: DuckDB results file (default: the sweep's base `db`, else the folder's).
    """
    sweep = load_sweep(sweep_file)
    if name:
        sweep = dataclasses.replace(sweep, name=name)
    path = _db(sweep, db)
    store = Store(path)
    earlier: dict[tuple[str, int], dict[str, Any]] = {}
    if resume:
        record = resolve_sweep(store, resume)
        sweep_id = record["sweep_id"]
        earlier = {(r["candidate"], r["sweep_repeat"]): r for r in sweep_runs(store, sweep_id)}
    else:
        sweep_id = str(uuid.uuid4())
    flow_ctx = FlowRunContext.get()
    start_sweep(store, sweep_id, name=sweep.name, file=sweep.path,
                spec={c.label: dict(c.values) for c in sweep.candidates}, axes=dict(sweep.axes),
                baseline=sweep.baseline.label, flow_run_id=str(flow_ctx.flow_run.id) if flow_ctx and flow_ctx.flow_run else None)
    runs: list[SweepRun] = []
    try:
        for candidate, repeat in sweep.runs():
            runs.append(_one(store, path, sweep, sweep_id, candidate, repeat, earlier.get((candidate.label, repeat))))
    except KeyboardInterrupt:
        finish_sweep(store, sweep_id, "cancelled")
        raise
    except BaseException:
        finish_sweep(store, sweep_id, "failed")
        raise
    status = "partial" if any(r.status != "completed" for r in runs) else "completed"
    finish_sweep(store, sweep_id, status)
    # The page and the UI's summary: views of what is stored, so neither can fail the sweep (both log instead).
    report = write_sweep_report_logged(store, sweep_id) if sweep.baseline.config.report else None
    publish_sweep_summary(store, sweep_id, report)
    return SweepResult(sweep_id=sweep_id, name=sweep.name, baseline=sweep.baseline.label, db=path, status=status,
                       runs=runs, report=str(report) if report else None)


def _one(store: Store, path: str, sweep: Sweep, sweep_id: str, candidate: Candidate, repeat: int,
         earlier: dict[str, Any] | None) -> SweepRun:
    """One run of the sweep: kept when an earlier attempt completed it, else run (or resumed), named in the sweep
    as soon as it is stored (so that a killed sweep's resume finds it)."""
    name = run_name(sweep, candidate, repeat)
    if earlier is not None and earlier["status"] == "completed":
        return SweepRun(candidate=candidate.label, repeat=repeat, run_id=earlier["run_id"], status="completed",
                        name=name, kept=True)
    config = candidate.config.model_copy(update={"name": name, "db": path,
                                                 "resume": earlier["run_id"] if earlier is not None else None})
    before = eval_flow.run_started
    eval_flow.run_started = _tagging(store, sweep_id, candidate.label, repeat, before)
    try:
        result = eval_flow.run_eval_config(config)
    finally:
        eval_flow.run_started = before
    return SweepRun(candidate=candidate.label, repeat=repeat, run_id=result.run_id, status=result.status, name=name,
                    scores=result.scores)


def _tagging(store: Store, sweep_id: str, candidate: str, repeat: int,
             then: Callable[[str], None] | None) -> Callable[[str], None]:
    def started(run_id: str) -> None:
        tag_run(store, run_id, sweep_id, candidate, repeat)
        if then is not None:
            then(run_id)

    return started
