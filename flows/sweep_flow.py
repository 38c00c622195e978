"""A sweep as a Prefect flow: the parent flow run of its candidates' eval runs, each a subflow run of
``run_eval_config`` (the Prefect UI shows the sweep with its runs under it), recorded in the `sweeps` table and
each run named in it (docs/sweeps.md).

The candidates' runs go side by side (each on a thread with its own event loop, as a run has), under one shared
budget (flows/engine/budget.py): at most the sweep's ``concurrency`` items in flight and ``judge_rpm`` requests a
minute across all of them, so a sweep of eight candidates sends no more at once than one run would. Freed slots go
round robin between the runs, and each run takes its items in the dataset's order, so the runs advance through
the items together: a sweep stopped part-way is still a paired comparison on the items every candidate has.
Repeats go one after another (all candidates' first runs, then their second...). The step cache is shared, so
a candidate that repeats another's target outputs or judge steps pays for them once. ``resume`` finishes a
sweep that stopped: its completed runs are kept, a run that stopped part-way is resumed (only its missing cells
run), the runs it never began are run.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any

from prefect.context import FlowRunContext
from prefect.exceptions import TerminationSignal
from pydantic import BaseModel, Field

import evalduck.flows.eval_flow as eval_flow
from evalduck.flows.engine.budget import SharedBudget, Slots, use_budget
from evalduck.flows.engine.dispatch import shared_local_cluster
from evalduck.flows.engine.tasks import RateLimiter
from evalduck.flows.inputs.sweep_spec import SweepSpec
from evalduck.flows.inputs.sweeps import Candidate, Sweep, SweepFileError, load_sweep, sweep_from_spec, with_run_options
from evalduck.flows.inputs.targets import importable_here
from evalduck.flows.project.defaults import default_db_path
from evalduck.flows.report.sweep_artifact import publish_sweep_summary, write_sweep_report_logged
from evalduck.flows.run.progress import current_sink, use_sink
from evalduck.flows.run.redacting_flow import redacting_flow
from evalduck.flows.run.started import on_run_started
from evalduck.flows.store import Store
from evalduck.flows.store.sweeps import finish_sweep, resolve_sweep, start_sweep, sweep_runs, tag_run

__all__ = ("SIDE_BY_SIDE", "SweepResult", "SweepRun", "run_name", "run_sweep")

# Runs of a sweep that go at once, each on a thread with its own event loop (one judge process serves them all): a sweep
# of more candidates runs them in groups of this many, all under the sweep's one concurrency and judge rate.
SIDE_BY_SIDE = 8


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
def run_sweep(sweep_file: str | None = None, sweep: SweepSpec | None = None, name: str | None = None,
              resume: str | None = None, db: str | None = None,
              options: dict[str, Any] | None = None) -> SweepResult:
    """Run every candidate of a sweep, given as a file or as data, one eval run each, as subflow runs of this one.

    Args:
        sweep_file: A sweep file (docs/sweeps.md), relative to the working directory. Empty when the sweep is
            given below.
        sweep: The sweep itself, with a sweep file's fields (the run-sweep deployment's form). Empty when a
            sweep file is given.
        name: The sweep's name (default: the sweep's `name`, else the file's stem); its runs are named after it.
        resume: A sweep (id, name or `latest`) to finish: only its missing runs and cells are computed.
        db: DuckDB results file (default: the sweep's base `db`, else the folder's).
        options: Run options over the sweep's base, for every candidate (e.g. {"concurrency": 32, "runner":
            "dask"}: what `evalduck sweep --concurrency 32 --runner dask` passes).

    Raises:
        SweepFileError: both or neither of `sweep_file` and `sweep`, or the sweep's problems (each by file
            line, or by field: `sweep parameter axes.target[1]: ...`), before anything runs.
    """
    if (sweep_file is None) == (sweep is None):
        raise SweepFileError([f"run_sweep: give the sweep as `sweep_file` (a file) or as `sweep` (its fields), "
                              f"exactly one; got {'both' if sweep is not None else 'neither'}"])
    importable_here()  # its `module:function` targets, imported now, are found in the folder it runs in
    sweep = load_sweep(sweep_file) if sweep_file is not None else sweep_from_spec(sweep)  # the checked Sweep
    if options:
        sweep = with_run_options(sweep, options)
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
    options = sweep.baseline.config  # run options are the sweep's: the same in every candidate
    budget = SharedBudget(Slots(options.concurrency), RateLimiter(options.judge_rpm))
    runs: list[SweepRun] = []
    try:
        with use_budget(budget), shared_local_cluster(options) as cluster:
            if cluster is not None:  # runner 'dask' without an address: one LocalCluster for every run, not one each
                sweep = dataclasses.replace(sweep, candidates=tuple(dataclasses.replace(
                    c, config=c.config.model_copy(update={"dask_address": cluster})) for c in sweep.candidates))
            for wave in _waves(sweep):
                runs += _side_by_side(budget, [(run_name(sweep, c, r).removeprefix(f"{sweep.name}/"), functools.partial(
                    _one, store, path, sweep, sweep_id, c, r, earlier.get((c.label, r)))) for c, r in wave])
    except _STOPPED:
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


# Ctrl-C, SIGTERM (Prefect's TerminationSignal), or a run cancelled because the sweep was stopped.
_STOPPED = (KeyboardInterrupt, TerminationSignal, asyncio.CancelledError)


def _waves(sweep: Sweep) -> list[list[tuple[Candidate, int]]]:
    """The sweep's runs in groups that go side by side: every candidate's run of one repeat (at most
    ``SIDE_BY_SIDE`` at once), repeat after repeat."""
    candidates = list(sweep.candidates)
    return [[(c, repeat) for c in candidates[i:i + SIDE_BY_SIDE]]
            for repeat in range(sweep.repeat) for i in range(0, len(candidates), SIDE_BY_SIDE)]


def _side_by_side(budget: SharedBudget, runs: list[tuple[str, Callable[[], SweepRun]]]) -> list[SweepRun]:
    """Each run on a thread of its own (its own event loop, as a run has), under the shared budget; their results
    in the order given. A run that fails, or the sweep stopped (Ctrl-C), stops the others, which end `cancelled`
    with what they stored; then the first error is raised."""
    sink = current_sink()
    budget.expect(len(runs))
    with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="evalduck-sweep-run") as pool:
        futures = [pool.submit(contextvars.copy_context().run, _with_sink, budget, sink, name, run)
                   for name, run in runs]
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((f for f in futures if f in done and f.exception() is not None), None)
            if failed is not None:
                raise failed.exception()  # type: ignore[misc]
            return [f.result() for f in futures]
        except BaseException:
            budget.cancel_all()
            wait(futures)
            raise


def _with_sink(budget: SharedBudget, sink: Any, name: str, run: Callable[[], SweepRun]) -> SweepRun:
    """``run`` with a bar of its own when the sweep's sink draws one per run (the CLI's), else the sweep's sink."""
    bars = getattr(sink, "for_run", None)
    try:
        with use_sink(bars(name) if bars is not None else sink):
            return run()
    finally:
        budget.arrive()  # ended: the others need not wait for it at the start line


def _one(store: Store, path: str, sweep: Sweep, sweep_id: str, candidate: Candidate, repeat: int,
         earlier: dict[str, Any] | None) -> SweepRun:
    """One run of the sweep: kept when an earlier attempt completed it, else run (or resumed), named in the sweep
    as soon as it is stored (so that a killed sweep's resume finds it)."""
    name = run_name(sweep, candidate, repeat)
    if earlier is not None and earlier["status"] == "completed":
        return SweepRun(candidate=candidate.label, repeat=repeat, run_id=earlier["run_id"], status="completed",
                        name=name, kept=True)
    # A repeat asks the target and the judge afresh (refresh): answered from the step cache it would be a copy of
    # the first run, and show no run-to-run noise at all. Its answers replace the cached ones.
    config = candidate.config.model_copy(update={"name": name, "db": path, "refresh": candidate.config.refresh or repeat > 0,
                                                 "resume": earlier["run_id"] if earlier is not None else None})
    with on_run_started(functools.partial(tag_run, store, sweep_id=sweep_id, candidate=candidate.label,
                                                    repeat=repeat)):
        result = eval_flow.run_eval_config(config)
    return SweepRun(candidate=candidate.label, repeat=repeat, run_id=result.run_id, status=result.status, name=name,
                    scores=result.scores)
