"""Where a run's task runs execute: ``LocalDispatch`` awaits each task on the flow's event loop (the
default), ``DaskDispatch`` submits it to a Dask cluster's workers (the cluster and its client from
prefect-dask's ``DaskTaskRunner``; each task run as ``evalduck.flows.engine.portable.run_task_run``). Both hand
back the task run's final Prefect state, so the engine treats their results, errors, cache hits and retries
alike; the flow alone writes the store. Which one a run uses comes in its ``EngineServices`` (plan.py).

On Dask, a task's job is a picklable call (``evalduck.flows.engine.portable``) instead of a closure over the run;
the task, its cache key, retries and result storage are the same objects as local, and the task engine
runs on the worker, recording to the same Prefect API. A worker lost mid-task: Dask runs the task again
on another worker (the same task run), or, past its ``allowed-failures``, the cell is stored as ``error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from prefect import Task
from prefect.states import State, exception_to_failed_state

from evalduck.flows.config import RunOptions
from evalduck.flows.engine.plan import Dispatch, RunPlan
from evalduck.flows.engine.tasks import Job, RateLimiter, run_code_step
from evalduck.flows.inputs.datasets import DatasetItem
from evalduck.flows.inputs.targets import Target
from evalduck.scorers import ConfigError, JudgeTransport, Scorer, Step, StepContext

if TYPE_CHECKING:
    from evalduck.flows.engine.portable import PortableScorer

__all__ = ("Dispatch", "LocalDispatch", "DaskDispatch", "dask_dispatch", "portables", "shared_local_cluster",
           "threads_per_worker")


class LocalDispatch:
    """Each task awaited here, on the flow's loop; requests through the run's transport."""

    def __init__(self, target: Target, transport: JudgeTransport) -> None:
        self.target, self.transport = target, transport

    async def run(self, task: Task[..., Any], parameters: Mapping[str, Any]) -> State[Any]:
        return await task(**parameters, return_state=True)  # type: ignore[no-any-return]

    def judge_job(self, step: Step, ctx: StepContext, limiter: RateLimiter) -> Job:
        return Job(lambda: step.arun(ctx, transport=self.transport), limiter)

    def code_job(self, step: Step, contexts: list[StepContext]) -> Job:
        return Job(lambda: run_code_step(step, contexts))

    def target_job(self, item: DatasetItem) -> Job:
        return Job(lambda: self.target.acall(item, transport=self.transport))


def threads_per_worker(concurrency: int, workers: int) -> int:
    """A worker runs one task per thread (each waits for its task run on the worker's loop), so a
    LocalCluster gets enough threads for the run's items in flight, plus one for code chunks."""
    return math.ceil(concurrency / workers) + 1


class DaskDispatch:
    """Task runs submitted to a Dask cluster through the client of prefect-dask's ``DaskTaskRunner`` (entered)."""

    def __init__(self, plan: RunPlan, runner: Any, portable: Mapping[str, PortableScorer], run_context: Any) -> None:
        self.plan = plan
        self.runner = runner
        self.portable = portable
        self.run_context = run_context  # the Dask future of the run's RunContext, on every worker

    def _submit(self, task: Task[..., Any], parameters: dict[str, Any]) -> Any:
        """What prefect-dask's submit does (a task run id, its inputs and asset context, ``run_task_async``
        on the worker), with the flow's context sent once per run instead of serialised per task run."""
        from uuid import uuid4

        from prefect.context import AssetContext
        from prefect.utilities.engine import collect_task_run_inputs_sync

        from evalduck.flows.engine.portable import run_task_run

        task_run_id = uuid4()
        dependencies = {k: collect_task_run_inputs_sync(v) for k, v in parameters.items()}
        assets = AssetContext.from_task_and_inputs(task=task, task_run_id=task_run_id, task_inputs=dependencies,
                                                   copy_to_child_ctx=True).serialize()
        return self.runner.client.submit(run_task_run, task, task_run_id, parameters, dependencies, assets,
                                         self.run_context, key=f"{task.name}-{task_run_id.hex}", pure=False)

    async def run(self, task: Task[..., Any], parameters: Mapping[str, Any]) -> State[Any]:
        job = parameters.get("job")
        if isinstance(job, Job) and job.limiter is not None:  # the run's rate, kept in the flow
            await job.limiter.acquire()
            parameters = {**parameters, "job": Job(job.call)}
        loop = asyncio.get_running_loop()
        try:
            # The sync Dask client blocks its caller for a round trip (submit; result: fetched from the
            # worker), so both go to a thread: on the loop they serialised every task run of the run.
            future = await asyncio.to_thread(self._submit, task, dict(parameters))
            done: asyncio.Future[None] = loop.create_future()

            def settle(_: Any) -> None:
                loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))

            future.add_done_callback(settle)
            await done
            state = await asyncio.to_thread(future.result)  # done: the task run's final state
        except Exception as exc:  # noqa: BLE001 - e.g. KilledWorker: the task run's failure, as local
            return await exception_to_failed_state(exc, message=f"Dask: {type(exc).__name__}: {exc}")
        if not isinstance(state, State):
            return await exception_to_failed_state(TypeError(f"Dask returned {type(state).__name__}, not a state"))
        return state

    def judge_job(self, step: Step, ctx: StepContext, limiter: RateLimiter) -> Job:
        from evalduck.flows.engine.portable import RemoteJudgeStep

        seed = step.judge.seed if step.judge is not None else None
        return Job(RemoteJudgeStep(self.portable[step.scorer_id], step.name, ctx, seed), limiter)

    def code_job(self, step: Step, contexts: list[StepContext]) -> Job:
        from evalduck.flows.engine.portable import RemoteCodeStep

        return Job(RemoteCodeStep(self.portable[step.scorer_id], step.name, list(contexts)))

    def target_job(self, item: DatasetItem) -> Job:
        from evalduck.flows.engine.portable import RemoteTarget

        return Job(RemoteTarget(self.plan.target, item))


def portables(scorers: Sequence[Scorer], target: Target) -> dict[str, PortableScorer]:
    """Each scorer as a worker gets it; the target checked to pickle (``prepare_run`` calls it and keeps the
    result on the plan, so a run that cannot go to Dask stops before it starts).

    Raises:
        ConfigError: a scorer or the target cannot reach a worker (named, with what to do).
    """
    import cloudpickle

    from evalduck.flows.engine.portable import portable_scorer

    portable = {s.id: portable_scorer(s) for s in scorers}
    if not target.calls:
        return portable
    try:
        cloudpickle.loads(cloudpickle.dumps(target))
    except Exception as exc:  # noqa: BLE001 - any pickling failure is reported the same way
        raise ConfigError(
            f"target {target.label} cannot be sent to Dask workers (runner 'dask'): it does not pickle "
            f"({type(exc).__name__}: {exc}). Give it as 'module:function' of a module the workers can import, "
            "or run with runner 'local'") from None
    return portable


@contextlib.contextmanager
def dask_dispatch(plan: RunPlan) -> Iterator[DaskDispatch]:
    """A ``DaskTaskRunner`` for the run: connected to ``dask_address``, else a LocalCluster of ``workers``
    processes (stopped after the run), and the dispatch over it."""
    from prefect_dask import DaskTaskRunner

    options = plan.options
    portable = plan.portable
    assert portable is not None, "prepare_run makes a Dask run's portable scorers"
    if options.dask_address:
        runner = DaskTaskRunner(address=options.dask_address)
    else:
        runner = DaskTaskRunner(cluster_class="distributed.LocalCluster", cluster_kwargs={
            "n_workers": options.workers, "processes": True, "dashboard_address": None,
            "threads_per_worker": threads_per_worker(options.concurrency, options.workers)})
    local = contextlib.nullcontext() if options.dask_address else _workers_skip_the_callers_main()
    with local, _api_for_workers(), runner:
        from evalduck.flows.engine.portable import QuietTaskRuns

        runner.client.register_plugin(QuietTaskRuns())  # connects (or starts the cluster) here, off the run's loop
        yield DaskDispatch(plan, runner, portable, _scattered_context(runner.client))


@contextlib.contextmanager
def shared_local_cluster(options: RunOptions) -> Iterator[str | None]:
    """For runs that go side by side (a sweep's) with runner 'dask' and no ``dask_address``: one LocalCluster of
    ``workers`` processes that all of them use (its address), instead of one cluster each; None otherwise."""
    if options.runner != "dask" or options.dask_address:
        yield None
        return
    from distributed import LocalCluster

    with _workers_skip_the_callers_main(), LocalCluster(
            n_workers=options.workers, processes=True, dashboard_address=None,
            threads_per_worker=threads_per_worker(options.concurrency, options.workers)) as cluster:
        yield str(cluster.scheduler_address)


@contextlib.contextmanager
def _workers_skip_the_callers_main() -> Iterator[None]:
    """While the run's LocalCluster lives (a worker restarted after a crash is spawned too): multiprocessing's
    spawn re-runs the caller's ``__main__`` in each worker process, so a plain script without an
    ``if __name__ == "__main__":`` guard would start the run again in every worker, which fails ("an attempt
    has been made to start a new process before the current process has finished its bootstrapping
    phase"). With the main module's file and spec hidden, spawn skips it, as for ``python -c``; what the
    workers need of the script travels by value (cloudpickle pickles ``__main__``'s functions whole)."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {name: main.__dict__[name] for name in ("__file__", "__spec__") if name in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None  # spawn reads the attribute, so it stays, empty
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


def _scattered_context(client: Any) -> Any:
    """The flow run's Prefect context, serialised once and held on every worker for the run."""
    from prefect.context import serialize_context

    from evalduck.flows.engine.portable import RunContext

    return client.scatter([RunContext(serialize_context())], broadcast=True, hash=False)[0]


@contextlib.contextmanager
def _api_for_workers() -> Iterator[None]:
    """The API the workers record task runs to: prefect-dask sends them this process's settings, which in
    local mode name no server, so each worker would start a temporary server of its own. Here they get the
    URL of this process's temporary server (on 127.0.0.1: workers on other machines need a server of
    their own, PREFECT_API_URL; docs/scale-out.md)."""
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    if get_current_settings().api.url:
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the process's temporary server, the one local mode uses
    server.start()  # started already by the flow run; a no-op then
    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        yield
