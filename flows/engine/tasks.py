"""Prefect tasks for one eval run: the target call and judge steps (one task per item and step), and cheap
code steps (one task per step over a chunk of items).

Cache keys are the scorer's own (``step.cache_key(ctx)``), handed to Prefect by ``StepCacheKey``, never
Prefect's INPUTS/TASK_SOURCE (which have no task identity, ignore helpers and choke on clients). Results
are JSON files in a configurable folder. Retries cover transient errors only, with exponential backoff,
jitter, and the server's Retry-After as a floor.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import Task, task
from prefect.cache_policies import NO_CACHE, CachePolicy
from prefect.client.schemas.objects import TaskRun
from prefect.context import TaskRunContext
from prefect.states import State, aget_state_exception
from prefect.tasks import exponential_backoff

from evalduck.flows.config import RunOptions
from evalduck.scorers import JudgeConfigError, JudgeTransientError, NotScorable, Step, StepContext

__all__ = (
    "StepCacheKey",
    "RateLimiter",
    "Job",
    "retry_kwargs",
    "cache_kwargs",
    "scorer_retries",
    "is_transient",
    "judge_step_task",
    "code_chunk_task",
    "target_task",
    "chunk_key",
    "NOT_SCORABLE",
)

# The key of a step's result that says the scorer raised NotScorable (the item lacks what it needs): a result,
# not a failure, so it is never retried, no task run fails (nor logs a traceback) for it, and it is cached
# like any result of the same inputs.
NOT_SCORABLE = "notScorable"

JITTER = 0.5
# Task-run id -> earliest monotonic time of its next attempt (a Retry-After floor under the backoff).
_NOT_BEFORE: dict[Any, float] = {}


@dataclass
class StepCacheKey(CachePolicy):
    """The cache key is the task's ``cache_key`` argument, computed by the scorer (or target) itself."""

    def compute_key(
        self, task_ctx: TaskRunContext, inputs: dict[str, Any], flow_parameters: dict[str, Any], **kwargs: Any
    ) -> str | None:
        return inputs.get("cache_key")


class RateLimiter:
    """At most ``rpm`` acquisitions per minute, spread evenly, shared by every coroutine of one run, or of the
    runs of a sweep, each on its own event loop (a thread lock: nothing is awaited while it is held)."""

    def __init__(self, rpm: float | None) -> None:
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    async def acquire(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            wait = self._next - now
            self._next = max(now, self._next) + self.interval
        if wait > 0:
            await asyncio.sleep(wait)


class Job:
    """What a task works on, in a plain object: Prefect neither walks it for futures nor hashes it."""

    __slots__ = ("call", "limiter")

    def __init__(self, call: Callable[[], Awaitable[Any]], limiter: RateLimiter | None = None) -> None:
        self.call = call
        self.limiter = limiter


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: judge/target transient errors, timeouts and connection errors; never config/auth."""
    if isinstance(exc, JudgeConfigError):
        return False
    return isinstance(exc, (JudgeTransientError, TimeoutError, asyncio.TimeoutError, ConnectionError))


async def _retry_transient(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    exc = await aget_state_exception(state)
    if not is_transient(exc):
        return False
    retry_after = getattr(exc, "retry_after", None)
    if retry_after:
        _NOT_BEFORE[task_run.id] = time.monotonic() + float(retry_after)
    return True


async def _run_job(job: Job) -> Any:
    ctx = TaskRunContext.get()
    if ctx is not None:
        wait = _NOT_BEFORE.pop(ctx.task_run.id, 0.0) - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
    if job.limiter is not None:
        await job.limiter.acquire()
    return await job.call()


def retry_kwargs(options: RunOptions, retries: int | None = None) -> dict[str, Any]:
    """Prefect's retry settings from the run's options; ``retries`` (a scorer's own) wins over the run's."""
    retries = options.retries if retries is None else retries
    backoff = options.retry_backoff_s
    return {
        "retries": retries,
        "retry_delay_seconds": exponential_backoff(backoff)(max(retries, 1)) if backoff > 0 else 0,
        "retry_jitter_factor": JITTER if backoff > 0 else None,
        "retry_condition_fn": _retry_transient,
    }


def cache_kwargs(options: RunOptions, cache_dir: Path) -> dict[str, Any]:
    """Where results are kept (never part of a cache key) and whether cached ones are ignored."""
    return {"result_storage": cache_dir, "refresh_cache": options.refresh}


_CACHED = {
    "cache_policy": StepCacheKey(),
    "persist_result": True,
    "result_serializer": "json",
    "cache_result_in_memory": False,
}


@task(name="judge-step", **_CACHED)
async def _judge_step(cache_key: str, item_id: str, job: Job) -> dict[str, Any]:
    """One attempt of one judge step on one item; the StepOutput as JSON, or ``{NOT_SCORABLE: reason}``."""
    try:
        output = await _run_job(job)
    except NotScorable as exc:
        return {NOT_SCORABLE: str(exc)}
    return output.model_dump(mode="json")


@task(name="target", **_CACHED)
async def _target(cache_key: str, item_id: str, job: Job) -> dict[str, Any]:
    """One attempt of the target on one item: {"output": ..., "usage": [...]}."""
    return await _run_job(job)


@task(name="code-step", **_CACHED)
async def _code_chunk(cache_key: str | None, span: str, job: Job) -> str:
    """A code step over a chunk of items, as JSON text of per-item {"result": ...} or {"error": "..."}.

    Text, not a list: Prefect walks a returned collection element by element (to link states), which
    would cost more than the step itself."""
    return json.dumps(await job.call(), separators=(",", ":"))


def scorer_retries(step: Step) -> int | None:
    """The retries a scorer was given itself (its judge's ``retries`` option), which win over the run's;
    None when it was left at its default."""
    judge = step.judge
    return judge.retries if judge is not None and "retries" in judge.model_fields_set else None


def judge_step_task(step: Step, options: RunOptions, cache_dir: Path) -> Task[..., Any]:
    """``<scorer id>.<step>`` per item, e.g. ``answer-relevancy-scorer.analyze[q-7]`` in the UI."""
    return _judge_step.with_options(
        name=step.label, task_run_name=f"{step.label}[{{item_id}}]", **retry_kwargs(options, scorer_retries(step)),
        **cache_kwargs(options, cache_dir),
    )


def target_task(label: str, options: RunOptions, cache_dir: Path) -> Task[..., Any]:
    """The task that calls the run's target for one item, with the run's retries and the step cache."""
    return _target.with_options(
        name=f"target.{label}", task_run_name="target[{item_id}]", **retry_kwargs(options),
        **cache_kwargs(options, cache_dir),
    )


def code_chunk_task(step: Step, options: RunOptions, cache_dir: Path, *, cached: bool = True) -> Task[..., Any]:
    """``<scorer id>.<step>`` over items, e.g. ``tone-scorer.analyze[items 1-500]`` (no retries: code is
    deterministic, and one item's failure is recorded for that item, not the chunk).

    ``cached=False`` for a judge scorer's micro-batches: which items share a batch depends on timing, so
    a batch's key never recurs, and looking it up and persisting its result only slowed the items
    waiting on it (the step itself takes microseconds)."""
    if not cached:
        return _code_chunk.with_options(
            name=step.label, task_run_name=f"{step.label}[{{span}}]", retries=0, cache_policy=NO_CACHE,
            persist_result=False,
        )
    return _code_chunk.with_options(
        name=step.label, task_run_name=f"{step.label}[{{span}}]", retries=0, **cache_kwargs(options, cache_dir)
    )


def chunk_key(keys: list[str]) -> str:
    """A chunk's key from its items' keys: any item's change recomputes the (cheap) chunk."""
    digest = hashlib.sha256(b"evalduck-chunk-v2")  # v2: results stored as JSON text
    for key in keys:
        digest.update(key.encode("ascii"))
    return digest.hexdigest()


async def run_code_step(step: Step, contexts: list[StepContext]) -> list[dict[str, Any]]:
    """Run a code step on each context; an item's exception becomes its error (or, for NotScorable, its
    ``NOT_SCORABLE`` reason), the chunk goes on."""
    out: list[dict[str, Any]] = []
    for ctx in contexts:
        try:
            out.append({"result": (await step.arun(ctx)).result})
        except NotScorable as exc:
            out.append({NOT_SCORABLE: str(exc)})
        except Exception as exc:  # noqa: BLE001 - recorded as the item's error
            out.append({"error": f"{step.label}: {type(exc).__name__}: {exc}"})
    return out
