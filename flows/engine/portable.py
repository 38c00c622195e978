"""What a Dask worker is sent instead of a closure over the run: a scorer it can rebuild, and the one call
to make with it. Every object here pickles (cloudpickle, as Dask sends it) and holds nothing of the flow's
process: no store, no judge child, no event loop; on the worker, judge requests go through litellm there.

A scorer travels as its own pickle when it has one (cloudpickle sends closures by value), else as its
prebuilt spec (id and options, rebuilt by ``evalduck.scorers.PREBUILT`` on the worker). Either way it is built once
per worker process, keyed by a digest of what was sent.

prefect-dask runs each async task with ``asyncio.run``, a new event loop per task run. That costs a task
run twice: litellm keeps state per loop (its logging worker's queue, its HTTP clients: "bound to a different
event loop", a new connection per request, and its clients closed at each loop's end), and Prefect's task
engine builds a new API client per loop (two per task run, each with its own TLS context: ~75% of a worker's
CPU per task run, measured). So a worker runs every task run it is sent on one long-lived event loop of
its process (``WorkerLoop``), where its judge and model requests go too and where one Prefect client per
API URL serves them all, as the flow's one client serves the local runner's task runs.

A task run reaches a worker as ``run_task_run``: prefect-dask's own submit serialised the flow's whole
Prefect context for every task (~0.1 s in the flow) and the worker rebuilt Prefect's settings from it for
every task (~0.35 s of a worker's CPU: pydantic-settings reading the environment, .env and the TOML files
again for each of its models), which capped a run at ~2.5 task runs/s whatever the workers. Here the
context is serialised once per run and sent once per worker (``RunContext``, scattered), the settings
built from it once per worker; each task run carries only what is its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

import cloudpickle
from distributed.diagnostics.plugin import WorkerPlugin

from evalduck.flows.inputs.datasets import DatasetItem
from evalduck.flows.inputs.targets import Target
from evalduck.scorers import PREBUILT, ConfigError, LiteLLMTransport, Scorer, StepContext, StepOutput, canonical_json

if TYPE_CHECKING:
    from prefect import Task
    from prefect.context import AsyncClientContext, SettingsContext, SyncClientContext
    from prefect.states import State

__all__ = ("PortableScorer", "portable_scorer", "RemoteJudgeStep", "RemoteCodeStep", "RemoteTarget", "QuietTaskRuns",
           "WorkerLoop", "worker_loop", "RunContext", "run_task_run")

T = TypeVar("T")
_BUILT: dict[str, Scorer] = {}  # on a worker: digest -> the scorer, built once per process
_LOCK = threading.Lock()  # a worker runs tasks on many threads
_LOOP: list[WorkerLoop] = []  # on a worker: the one, started at its first task run or request


class WorkerLoop:
    """This process's one long-lived event loop (a daemon thread) and what lives on it: litellm's transport
    (used only on this loop, where every task run that asks runs) and Prefect's clients per API URL for the
    task runs."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.transport = LiteLLMTransport()
        self._clients: dict[str, tuple[AsyncClientContext, SyncClientContext]] = {}
        self._clients_lock = asyncio.Lock()  # bound to the loop at its first use, on the loop
        threading.Thread(target=self.loop.run_forever, name="evalduck-worker-loop", daemon=True).start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro`` on this loop, from a Dask worker's thread (which waits for it)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def clients(self) -> tuple[AsyncClientContext, SyncClientContext]:
        """On the loop, under a task run's settings: the entered client contexts (the task engine's async
        client; the sync one ``hydrated_context`` gives the flow run context) for their API URL, entered once
        and kept for the process's life, as the flow keeps its own."""
        from prefect.context import AsyncClientContext, SyncClientContext
        from prefect.settings import get_current_settings

        url = str(get_current_settings().api.url)
        async with self._clients_lock:  # task runs arrive together: one pair each URL, not one each
            found = self._clients.get(url)
            if found is None:
                tokens = AsyncClientContext.__var__.set(None), SyncClientContext.__var__.set(None)  # type: ignore[arg-type]
                found = AsyncClientContext(), SyncClientContext()
                await found[0].__aenter__()  # entering sets the variables in this task run's context only:
                found[1].__enter__()  # each task run sets its own
                AsyncClientContext.__var__.reset(tokens[0])
                SyncClientContext.__var__.reset(tokens[1])
                self._clients[url] = found
        return found


def worker_loop() -> WorkerLoop:
    """This worker process's one loop for task runs, started on first use (one Prefect client for all)."""
    with _LOCK:
        if not _LOOP:
            _LOOP.append(WorkerLoop())
        return _LOOP[0]


@dataclass(frozen=True)
class PortableScorer:
    """A scorer as sent to a worker: ``blob`` (its pickle) or ``spec`` (prebuilt id + options JSON)."""

    scorer_id: str
    digest: str
    blob: bytes | None = None
    spec: tuple[str, str] | None = None

    def scorer(self) -> Scorer:
        with _LOCK:
            built = _BUILT.get(self.digest)
            if built is None:
                if self.blob is not None:
                    built = cloudpickle.loads(self.blob)
                else:
                    assert self.spec is not None
                    built = PREBUILT[self.spec[0]].factory(json.loads(self.spec[1]))
                _BUILT[self.digest] = built
        return built

    def step(self, name: str) -> Any:
        return next(s for s in self.scorer().steps if s.name == name)


def _rebuilds_the_same(scorer: Scorer) -> tuple[str, str] | None:
    """The prebuilt spec that rebuilds ``scorer`` (same id, version and steps), or None."""
    prebuilt = PREBUILT.get(scorer.id)
    if prebuilt is None:
        return None
    options = canonical_json(dict(scorer.options), default=str)
    try:
        rebuilt = prebuilt.factory(json.loads(options))
    except Exception:  # noqa: BLE001 - options that do not rebuild it: not a spec
        return None
    same = rebuilt.version == scorer.version and [s.name for s in rebuilt.steps] == [s.name for s in scorer.steps]
    return (scorer.id, options) if same else None


def portable_scorer(scorer: Scorer) -> PortableScorer:
    """How ``scorer`` reaches a Dask worker: its pickle, else its prebuilt spec.

    Raises:
        ConfigError: neither works; names the scorer, the pickling error and what to do.
    """
    try:
        blob = cloudpickle.dumps(scorer)
        cloudpickle.loads(blob)
    except Exception as exc:  # noqa: BLE001 - any pickling failure is reported the same way
        spec = _rebuilds_the_same(scorer)
        if spec is None:
            raise ConfigError(
                f"scorer {scorer.id!r} cannot be sent to Dask workers (runner 'dask'): it does not pickle "
                f"({type(exc).__name__}: {exc}) and it is not a prebuilt scorer that can be rebuilt from its "
                "id and options. Keep what its step functions use picklable (build clients, locks and files "
                "inside the step, or define the functions at module level in a module the workers can "
                "import), or run it with runner 'local'"
            ) from None
        digest = hashlib.sha256("\0".join(spec).encode()).hexdigest()
        return PortableScorer(scorer.id, digest, spec=spec)
    return PortableScorer(scorer.id, hashlib.sha256(blob).hexdigest(), blob=blob)


@dataclass(frozen=True)
class RemoteJudgeStep:
    """One judge step on one item, on the worker (judge requests through litellm in the worker)."""

    scorer: PortableScorer
    step_name: str
    ctx: StepContext
    seed: int | None = None  # the flow's step's judge seed: a sample of repeated judging has its own

    async def __call__(self) -> StepOutput:
        step = self.scorer.step(self.step_name)
        if step.judge is not None and step.judge.seed != self.seed:
            step = dataclasses.replace(step, judge=step.judge.model_copy(update={"seed": self.seed}))
        return await step.arun(self.ctx, transport=worker_loop().transport)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class RemoteCodeStep:
    """One code step over a chunk of items, on the worker."""

    scorer: PortableScorer
    step_name: str
    contexts: list[StepContext]

    async def __call__(self) -> list[dict[str, Any]]:
        from evalduck.flows.engine.tasks import (
            run_code_step,  # evalduck.flows.engine.tasks imports prefect: on the worker, it is there
        )

        return await run_code_step(self.scorer.step(self.step_name), self.contexts)


@dataclass(frozen=True)
class RemoteTarget:
    """One target call on one item, on the worker (a model target through litellm in the worker)."""

    target: Target
    item: DatasetItem

    async def __call__(self) -> dict[str, Any]:
        return await self.target.acall(self.item, transport=worker_loop().transport)


class RunContext:
    """The flow run's Prefect context as ``prefect.context.serialize_context`` gives it, serialised once per
    run; on a worker, its settings built once (the built ones are not pickled)."""

    def __init__(self, serialized: dict[str, Any]) -> None:
        self.serialized = serialized
        self._settings: SettingsContext | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"serialized": self.serialized}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.serialized, self._settings = state["serialized"], None

    def settings(self) -> SettingsContext:
        """A new settings context (one per task run: a context is entered once) on the settings built once."""
        from prefect.context import SettingsContext

        with _LOCK:
            if self._settings is None:
                self._settings = SettingsContext(**self.serialized["settings_context"])
            built = self._settings
        return SettingsContext(profile=built.profile, settings=built.settings)


def run_task_run(task: Task[..., Any], task_run_id: UUID, parameters: dict[str, Any], dependencies: dict[str, Any],
                 asset_context: dict[str, Any], run: RunContext) -> State[Any]:
    """On a worker: the task run, as prefect-dask's submit runs it (``run_task_async`` with the flow's
    context), on the worker's one loop with its Prefect client, and the run's settings entered here instead
    of rebuilt from the context."""
    from prefect.context import AsyncClientContext, SyncClientContext
    from prefect.task_engine import run_task_async

    context = {**run.serialized, "settings_context": {}, "asset_context": asset_context}
    loop = worker_loop()

    async def on_the_loop() -> State[Any]:
        with run.settings():
            async_client, sync_client = await loop.clients()
            tokens = AsyncClientContext.__var__.set(async_client), SyncClientContext.__var__.set(sync_client)
            try:
                return await run_task_async(task=task, task_run_id=task_run_id, parameters=parameters, wait_for=None,
                                            return_type="state", dependencies=dependencies, context=context)
            finally:
                SyncClientContext.__var__.reset(tokens[1])
                AsyncClientContext.__var__.reset(tokens[0])

    return loop.run(on_the_loop())


class QuietTaskRuns(WorkerPlugin):  # type: ignore[misc]
    """On each worker, Prefect's two routine lines per task run dropped, by the flow's own rule
    (``evalduck.flows.engine.quiet.quiet_task_run_info``): without it a worker prints them on its stderr, which for a
    LocalCluster is the user's terminal."""

    name = "evalduck-quiet-task-runs"

    def setup(self, worker: Any) -> None:
        from evalduck.flows.engine.quiet import quiet_task_run_info

        self._quiet = quiet_task_run_info()
        self._quiet.__enter__()

    def teardown(self, worker: Any) -> None:
        self._quiet.__exit__(None, None, None)
