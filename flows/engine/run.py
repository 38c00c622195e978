"""One run on one event loop: bounded items in flight, each item's target call and judge scorers, the
code-only scorers over chunks, and every finished cell written through the store as it finishes (a killed
run keeps them). Concurrency is decided here, and only here.

- at most ``concurrency`` items in flight (a semaphore; a sweep's runs share one: flows/engine/budget.py), each
  a task of one ``TaskGroup``;
- per item, its judge scorers side by side (``gather``), each a walk through its steps;
- code-only scorers: items whose output is known go to one ``StepBatcher`` of ``chunk_size`` chunks;
- a judge scorer's code steps: one drain-what-queued ``StepBatcher`` per step;
- the store's writer thread (``ResultWriter``), flushed off the loop at the end.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from evalduck.flows.engine.batches import StepBatcher
from evalduck.flows.engine.budget import current_budget
from evalduck.flows.engine.cells import cell_row, error_row, usage_fields
from evalduck.flows.engine.plan import (
    EngineServices,
    Executed,
    FailFast,
    ItemResult,
    ItemState,
    MisconfiguredRun,
    RunPlan,
    StoreWriteError,
)
from evalduck.flows.engine.samples import sampled_cell
from evalduck.flows.engine.spend import BUDGET_EXCEEDED, BudgetReached
from evalduck.flows.engine.steps import StepFailed, StepRunner
from evalduck.flows.store import ResultWriter, SampleRow, ScoreRow
from evalduck.scorers import PipelineState, Scorer, walk_steps

__all__ = ("Run",)

logger = logging.getLogger("evalduck.engine")


class Run:
    """One execution of a plan: its result writer, its progress and the tasks of its items."""

    def __init__(self, plan: RunPlan, services: EngineServices) -> None:
        self.plan = plan
        self.sink, self.on_progress = services.sink, services.on_progress
        self.writer = ResultWriter(plan.store, plan.run_id)
        self.budget = current_budget()  # a sweep's, shared with its other runs; else this run's own limits
        self.sem = (self.budget.slots.for_holder(plan.run_id) if self.budget is not None
                    else asyncio.Semaphore(plan.options.concurrency))
        self.steps = StepRunner(plan, services)
        self.judge_scorers = [s for s in plan.scorers if any(st.is_judge for st in s.steps)]
        self.code_scorers = [s for s in plan.scorers if s not in self.judge_scorers]
        self.states: dict[str, ItemState] = {}
        self.completed = 0
        self.chunks: StepBatcher[ItemState, None] = StepBatcher(self._chunk, max_size=plan.options.chunk_size)
        self._callbacks: set[asyncio.Future[Any]] = set()  # async on_item_complete results, awaited at the end

    # ---- cells -----------------------------------------------------------------------------------

    def _write(self, items: Sequence[dict[str, Any]] = (), scores: Sequence[ScoreRow] = (),
               samples: Sequence[SampleRow] = ()) -> None:
        """Queue rows for the store (returns at once); a failed earlier write surfaces here."""
        try:
            self.writer.add(items=items, scores=scores, samples=samples)
        except Exception as exc:
            raise self._write_failed(exc) from exc

    def _write_failed(self, exc: Exception) -> StoreWriteError:
        return StoreWriteError(f"run {self.plan.run_id}: writing results to {self.plan.store.path} failed "
                               f"(what was written before stays): {type(exc).__name__}: {exc}")

    def _finish_cell(self, state: ItemState, row: ScoreRow, samples: Sequence[SampleRow] = ()) -> None:
        self._write(scores=[row], samples=samples)
        state.rows[row.scorer_id] = row
        if row.status == "error" and self.plan.options.fail_fast and not self.steps.spend.stopped:  # not a cut cell
            raise FailFast(f"item {row.item_id!r}, scorer {row.scorer_id!r}: {row.error}")
        state.pending -= 1
        if state.pending == 0:
            self._item_done(state)

    def _item_done(self, state: ItemState) -> None:
        self.completed += 1
        if self.sink is not None:
            self.sink.advance()
        if self.on_progress is not None:
            self.on_progress(self.completed, len(self.states))
        if self.plan.on_item_complete is not None:
            self._report_item(state)

    def _report_item(self, state: ItemState) -> None:
        assert self.plan.on_item_complete is not None
        result = ItemResult(
            item_id=state.item.item_id, input=state.item.input, output=state.output,
            scores={k: r.score for k, r in state.rows.items()}, statuses={k: r.status for k, r in state.rows.items()},
            errors={k: r.error for k, r in state.rows.items() if r.error},
        )
        try:
            returned = self.plan.on_item_complete(result)
            if inspect.isawaitable(returned):
                self._callbacks.add(task := asyncio.ensure_future(returned))
                task.add_done_callback(self._callbacks.discard)
        except Exception:  # a user callback must not lose the run's results
            logger.warning("on_item_complete raised for item %r", result.item_id, exc_info=True)

    def _error_all(self, state: ItemState, scorers: list[Scorer], message: str) -> None:
        for scorer in scorers:
            if self.plan.wanted(state.item.item_id, scorer.id):
                self._finish_cell(state, error_row(self.plan.run_id, scorer, state.item.item_id, message))

    def _pipelines(self, scorer: Scorer, states: list[ItemState]) -> list[PipelineState]:
        """Each item's walk through ``scorer``; an item whose scorer input is bad (e.g. a target that
        returned bad messages) starts failed."""
        pipelines = []
        for state in states:
            try:
                pipelines.append(PipelineState(scorer, state.scorer_input()))
            except Exception as exc:  # noqa: BLE001 - the cell's error
                failed = PipelineState(scorer, None)  # type: ignore[arg-type]
                failed.error = exc
                pipelines.append(failed)
        return pipelines

    # ---- per item: the target, then its judge scorers ----------------------------------------------

    async def _item(self, state: ItemState) -> None:
        async with self.sem:
            plan = self.plan
            if plan.target.calls:
                try:
                    state.output, latency = await self.steps.call_target(state.item)
                except StepFailed as exc:
                    self._error_all(state, plan.scorers, str(exc))
                    return
                except BudgetReached:  # the run's budget is spent: the item's cells are left for a resume
                    return
                self._write(items=[{**state.item.store_record(), "output": state.output, "target_latency_s": latency}])
                if self.code_scorers:
                    self.chunks.put(state)  # code-only scorers need only the output
            wanted = [s for s in self.judge_scorers if plan.wanted(state.item.item_id, s.id)]
            cells = await asyncio.gather(*(self._judge_cell(s, state) for s in wanted))
            for row, samples in filter(None, cells):  # None: a cell the budget stopped before it spent anything
                self._finish_cell(state, row, samples)

    async def _judge_cell(self, scorer: Scorer, state: ItemState) -> tuple[ScoreRow, list[SampleRow]] | None:
        """The cell, judged once, or ``judge_samples`` times side by side (its samples' rows with it). A cell the
        budget stopped part-way is an error with what it spent (a resume computes it, its finished steps from the
        step cache), or None (left out) when it spent nothing."""
        k = self.plan.samples(scorer)
        if k == 1:
            row, _ = await self._judge_sample(scorer, state, 0)
            return (row, []) if row is not None else None
        samples = await asyncio.gather(*(self._judge_sample(scorer.sampled(i), state, i) for i in range(k)))
        rows = [row for row, _ in samples if row is not None]
        if not any(cut for _, cut in samples):
            return sampled_cell(rows, self.plan.options.judge_aggregate)
        if not rows:
            return None
        cell, _ = sampled_cell(rows, self.plan.options.judge_aggregate)
        error = next((r.error for r, cut in samples if cut and r is not None), f"{scorer.id}: a sample not sent, the "
                     "run's budget (max_cost) was reached")
        return cell.model_copy(update={"status": "error", "score": None, "score_sd": None, "reason": None,
                                       "error": error}), []

    async def _judge_sample(self, scorer: Scorer, state: ItemState, sample: int) -> tuple[ScoreRow | None, bool]:
        """The sample's row, and whether the budget stopped it (then its row is an error with what it spent, or
        None when it spent nothing)."""
        spent: list[Mapping[str, Any]] = []
        (pipeline,) = self._pipelines(scorer, [state])
        await walk_steps([pipeline], self.steps.for_item(state.item, spent, sample))
        if not isinstance(pipeline.error, BudgetReached):
            return cell_row(self.plan.run_id, pipeline, state.item.item_id, spent), False
        if not spent:
            return None, True
        return error_row(self.plan.run_id, scorer, state.item.item_id, str(pipeline.error),
                         **usage_fields(pipeline.outputs, spent)), True

    # ---- code-only scorers over chunks -------------------------------------------------------------

    async def _chunk(self, states: list[ItemState]) -> list[None]:
        run_step = self.steps.for_chunk([s.item.where for s in states],
                                        lambda: {id(s.run): s.item.item_id for s in states if s.run is not None})
        for scorer in self.code_scorers:
            todo = [s for s in states if self.plan.wanted(s.item.item_id, scorer.id)]
            pipelines = self._pipelines(scorer, todo)
            await walk_steps([p for p in pipelines if p.error is None], run_step)
            for state, pipeline in zip(todo, pipelines, strict=True):
                self._finish_cell(state, cell_row(self.plan.run_id, pipeline, state.item.item_id))
        return [None] * len(states)

    # ---- the whole run -----------------------------------------------------------------------------

    def _start(self) -> None:
        plan = self.plan
        for item in plan.items:
            cells = sum(1 for s in plan.scorers if plan.wanted(item.item_id, s.id))
            if cells:
                output = None if plan.target.calls else item.output
                self.states[item.item_id] = ItemState(item=item, pending=cells, output=output)
        if self.sink is not None:
            self.sink.start(len(self.states))
        self._write(scores=[
            ScoreRow(run_id=plan.run_id, item_id=item.item_id, scorer_id=sk.scorer_id, scorer_version=sk.version or "-",
                     status="skipped", reason=sk.reason)
            for sk in plan.skipped for item in plan.items if plan.wanted(item.item_id, sk.scorer_id)
        ])

    async def run(self) -> Executed:
        """The run, and its hits and misses per step (``StepRunner.cache_lines``)."""
        plan = self.plan
        status: str | None = None  # "completed" once every item is done: written with the last batch
        try:
            if self.budget is not None:
                await self.budget.register()  # stopping the sweep cancels this run; its group starts together
            self._start()
            async with asyncio.TaskGroup() as group:
                self.chunks.spawn = group.create_task  # a failed chunk (FailFast, the store) ends the run
                if not plan.target.calls and self.code_scorers:
                    for state in self.states.values():  # outputs known: chunks in dataset order
                        self.chunks.put(state)
                if self.judge_scorers or plan.target.calls:
                    items = [group.create_task(self._item(s)) for s in self.states.values()]
                    if items:
                        await asyncio.wait(items)
                await self.chunks.close()
            if self._callbacks:
                await asyncio.gather(*self._callbacks, return_exceptions=True)
            status = BUDGET_EXCEEDED if self.steps.spend.stopped else "completed"
        except* (FailFast, MisconfiguredRun, StoreWriteError) as group_exc:
            first = group_exc.exceptions[0]
            raise first from first.__cause__
        finally:
            try:  # the final flush, off the loop; rows of a failed write stay queued and it raises
                await asyncio.to_thread(self.writer.close, status)
            except Exception as exc:
                raise self._write_failed(exc) from exc
            finally:
                try:
                    await asyncio.to_thread(self.steps.ledger.save)  # each step's keys, for the next run's explanation
                finally:
                    if self.sink is not None:
                        self.sink.finish()
        spend = self.steps.spend
        if spend.stopped:
            logger.warning("run %s stopped at its budget: spent $%.4f of $%.4f (max_cost); what it stored is kept, and "
                           "a resume with a larger max_cost computes the rest", plan.run_id, spend.total, spend.budget)
        return Executed(status=status, cache=self.steps.cache_lines(),  # type: ignore[arg-type]
                        spend=spend.total if spend.budget is not None else None)

