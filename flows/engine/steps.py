"""Where each step runs: a judge step as one Prefect task per item, a code step as one task over a batch
of items (a chunk of a code-only scorer, or a judge scorer's micro-batch), the target as one task per item.

Each ``run_step`` below is a ``evalduck.scorers.RunStep`` for ``evalduck.scorers.walk_steps``: the walk through a scorer's
steps is the library's, and this module only says where a step goes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from prefect import Task
from prefect.states import aget_state_exception

from evalduck.errors import EvalduckError
from evalduck.flows.engine.batches import StepBatcher
from evalduck.flows.engine.budget import current_budget
from evalduck.flows.engine.cache_ledger import CacheLedger, target_parts
from evalduck.flows.engine.cells import error_text
from evalduck.flows.engine.dispatch import LocalDispatch
from evalduck.flows.engine.plan import EngineServices, MisconfiguredRun, RunPlan
from evalduck.flows.engine.spend import BudgetReached, Spend, kept_spend
from evalduck.flows.engine.tasks import (
    NOT_SCORABLE,
    RateLimiter,
    chunk_key,
    code_chunk_task,
    judge_step_task,
    target_task,
)
from evalduck.flows.inputs.datasets import DatasetItem
from evalduck.scorers import JudgeConfigError, NotScorable, RunStep, Step, StepContext, StepOutput

__all__ = ("StepFailed", "StepRunner", "span")


class StepFailed(EvalduckError, RuntimeError):
    """One item's step failed; the message is the cell's error text (it starts with the step's label)."""


def span(wheres: list[str]) -> str:
    """How a chunk task run names its items: ``7 items: data.jsonl line 3 .. data.jsonl line 40``."""
    return f"{len(wheres)} items: {wheres[0]} .. {wheres[-1]}" if len(wheres) > 1 else wheres[0]


Batch = list[tuple[StepContext, str]]  # (context, where) per item


class StepRunner:
    """The run's Prefect tasks (one per step and one for the target, built once) and what runs on them."""

    def __init__(self, plan: RunPlan, services: EngineServices) -> None:
        self.plan = plan
        # Where task runs execute: the services' dispatch (runner 'dask'), else awaited on this loop.
        self.dispatch = services.dispatch or LocalDispatch(plan.target, services.transport)
        budget = current_budget()  # a sweep's runs share one rate, and compute a step once (flows/engine/budget.py)
        self.limiter = budget.limiter if budget is not None else RateLimiter(plan.options.judge_rpm)
        self.in_flight = budget.in_flight if budget is not None else None
        resumed = plan.todo is not None and plan.options.max_cost is not None  # a budget counts the whole run's spend
        self.spend = Spend(plan.options.max_cost, kept_spend(plan.store, plan.run_id) if resumed else 0.0)
        self.ledger = CacheLedger(plan.cache_dir, refresh=plan.options.refresh)  # each step's last key per item
        self.step_tasks: dict[str, Task[..., Any]] = {}
        self.chunk_tasks: dict[str, Task[..., Any]] = {}
        self.batchers: dict[str, StepBatcher[tuple[StepContext, str], StepOutput | BaseException]] = {}
        options, cache_dir = plan.options, plan.cache_dir
        for scorer in plan.scorers:
            code_only = not any(s.is_judge for s in scorer.steps)
            for step in scorer.steps:
                if step.is_judge:
                    self.step_tasks[step.label] = judge_step_task(step, options, cache_dir)
                    continue
                self.chunk_tasks[step.label] = code_chunk_task(step, options, cache_dir, cached=code_only)
                if not code_only:  # a judge scorer's code step: micro-batches of whatever items are ready
                    self.batchers[step.label] = StepBatcher(
                        lambda batch, step=step: self.run_chunk(step, [c for c, _ in batch], span([w for _, w in batch])))
        self.target_task = target_task(plan.target.label, options, cache_dir) if plan.target.calls else None

    async def call_target(self, item: DatasetItem) -> tuple[Any, float | None]:
        """The item's output and the seconds the target took to give it (None from a cache written before
        targets were timed); raises ``StepFailed`` with the target's error."""
        target = self.plan.target
        assert self.target_task is not None
        key = target.cache_key(item)
        self.spend.allow(f"target {target.label}")  # BudgetReached: the item is left for a resume
        async with self._once(f"target:{key}"):
            state = await self.dispatch.run(self.target_task, {
                "cache_key": key, "item_id": item.item_id, "job": self.dispatch.target_job(item)})
        if not state.is_completed():
            exc = await aget_state_exception(state)
            self._stop_if_misconfigured(f"target {target.label}", exc)
            raise StepFailed(f"target {target.label}: {type(exc).__name__}: {exc}")
        self.ledger.target(target).note(item.item_id, key, state.name == "Cached", lambda: target_parts(target, item))
        result = await state.aresult()
        if state.name != "Cached":
            self.spend.add(result.get("usage") or [])
        return result["output"], result.get("latency_s")

    def for_item(self, item: DatasetItem, spent: list[Mapping[str, Any]], sample: int = 0) -> RunStep:
        """One item's judge scorer: judge steps as tasks, code steps through their micro-batcher. The
        usage of requests actually made (not cached) is added to ``spent``. The cache record (--explain-cache)
        follows sample 0 of repeated judging, the sample a run without repeats has."""

        async def run_step(step: Step, contexts: list[StepContext]) -> list[StepOutput | BaseException]:
            ctx = contexts[0]
            if not step.is_judge:
                return [await self.batchers[step.label].submit((ctx, item.where))]
            try:
                key = step.cache_key(ctx)
            except Exception as exc:  # noqa: BLE001 - the cell's error
                return [exc]
            try:
                self.spend.allow(step.label)
            except BudgetReached as exc:
                return [exc]
            job = self.dispatch.judge_job(step, ctx, self.limiter)
            async with self._once(f"{step.label}:{key}"):
                state = await self.dispatch.run(self.step_tasks[step.label], {"cache_key": key, "item_id": item.item_id,
                                                                              "job": job})
            if not state.is_completed():
                exc = await aget_state_exception(state)
                self._stop_if_misconfigured(step.label, exc)
                return [StepFailed(error_text(step.label, exc))]
            result = await state.aresult()
            if sample == 0:
                self.ledger.step(step).note(item.item_id, key, state.name == "Cached",
                                            lambda: self.ledger.parts(step, ctx))
            if NOT_SCORABLE in result:
                return [NotScorable(result[NOT_SCORABLE])]
            out = StepOutput.model_validate(result)
            if state.name != "Cached":
                spent.extend(usage := [u.model_dump() for u in out.usage])
                self.spend.add(usage)
            return [out]

        return run_step

    def _once(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Around computing ``key``: in a sweep, after any other run computing the same key (flows/engine/budget.py)."""
        return self.in_flight.once(key) if self.in_flight is not None else contextlib.nullcontext()

    def _stop_if_misconfigured(self, label: str, exc: BaseException) -> None:
        if isinstance(exc, JudgeConfigError):
            raise MisconfiguredRun(
                f"run {self.plan.run_id} stopped at its first configuration error, which every request would "
                f"hit: {error_text(label, exc)}. What it stored is kept; once that is fixed, `--resume "
                f"{self.plan.run_id}` computes the rest") from exc

    def for_chunk(self, wheres: list[str], items: Callable[[], Mapping[int, str]]) -> RunStep:
        """A code-only scorer over a chunk of items: each step one (cached) task over all of them.
        ``items`` maps each item's ``ScorerInput`` (by ``id``) to its item id, for the ledger."""
        name = span(wheres)

        async def run_step(step: Step, contexts: list[StepContext]) -> list[StepOutput | BaseException]:
            return await self.run_chunk(step, contexts, name, items)

        return run_step

    async def run_chunk(self, step: Step, contexts: list[StepContext], name: str,
                        items: Callable[[], Mapping[int, str]] | None = None) -> list[StepOutput | BaseException]:
        """One chunk task of a code step: per item its output or its error; a chunk that fails as a whole
        errors each of its items, and the run goes on."""
        try:
            keys = [step.cache_key(c) for c in contexts] if step.label not in self.batchers else None
            key = chunk_key(keys) if keys is not None else None
            job = self.dispatch.code_job(step, contexts)
            state = await self.dispatch.run(self.chunk_tasks[step.label], {"cache_key": key, "span": name, "job": job})
            if not state.is_completed():
                raise await aget_state_exception(state)
            if keys is None:
                self.ledger.not_cached(step.label, len(contexts))
            elif items is not None:
                self._note_chunk(step, contexts, keys, state.name == "Cached", items())
            outs: list[dict[str, Any]] = json.loads(await state.aresult())
            if len(outs) != len(contexts):
                raise ValueError(f"{len(outs)} results for {len(contexts)} items")
        except Exception as exc:  # noqa: BLE001 - the chunk's items get the error
            failed = StepFailed(f"{step.label}: {type(exc).__name__}: {exc}")
            return [failed] * len(contexts)
        return [StepFailed(out["error"]) if "error" in out else NotScorable(out[NOT_SCORABLE]) if NOT_SCORABLE in out
                else StepOutput(result=out["result"]) for out in outs]

    def _note_chunk(self, step: Step, contexts: list[StepContext], keys: list[str], hit: bool,
                    items: Mapping[int, str]) -> None:
        """Each item of a chunk in the ledger: the chunk is cached whole, so an item whose own key is its last
        misses when another item of the chunk changed."""
        book = self.ledger.step(step)
        ids = [items.get(id(c.run)) for c in contexts]
        moved = any(i is None or book.changed(i, k) for i, k in zip(ids, keys, strict=True))
        for item_id, ctx, key in zip(ids, contexts, keys, strict=True):
            if item_id is not None:
                book.note(item_id, key, hit, lambda ctx=ctx: self.ledger.parts(step, ctx), chunk_changed=moved)

    def cache_lines(self) -> list[dict[str, Any]]:
        """The run's hits and misses per step (``--explain-cache``): the target first, then each scorer's
        steps in order."""
        order = ["target"] + [step.label for scorer in self.plan.scorers for step in scorer.steps]
        return self.ledger.lines(order)
