"""What a Dask worker is sent instead of a closure over the run: a scorer it can rebuild, and the one call
to make with it. Every object here pickles (cloudpickle, as Dask sends it) and holds nothing of the flow's
process: no store, no judge child, no event loop; on the worker, judge requests go through litellm there.

A scorer travels as its own pickle when it has one (cloudpickle sends closures by value), else as its
prebuilt spec (id and options, rebuilt by ``scorers.PREBUILT`` on the worker). Either way it is built once
per worker process, keyed by a digest of what was sent.

prefect-dask runs each async task with ``asyncio.run``, a new event loop per task run; litellm keeps
state per loop (its logging worker's queue, its HTTP clients), which broke under that ("bound to a
different event loop"), and a new loop per request would open a new connection each time. So a worker's
judge and model requests go to one long-lived loop of the worker process (``worker_transport``).

A task run reaches a worker as ``run_task_run``: prefect-dask's own submit serialised the flow's whole
Prefect context for every task (~0.1 s in the flow) and the worker rebuilt Prefect's settings from it for
every task (~0.35 s of a worker's CPU: pydantic-settings reading the environment, .env and the TOML files
again for each of its models), which capped a run at ~2.5 task runs/s whatever the workers. Here the
context is serialised once per run and sent once per worker (``RunContext``, scattered), the settings
built from it once per worker; each task run carries only what is its own.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

import cloudpickle
from distributed.diagnostics.plugin import WorkerPlugin
from scorers import PREBUILT, ConfigError, JudgeUsage, LiteLLMTransport, Scorer, StepContext, StepOutput, canonical_json

from flows.datasets import DatasetItem
from flows.targets import Target

if TYPE_CHECKING:
    from prefect import Task
    from prefect.context import SettingsContext
    from prefect.states import State

__all__ = ("PortableScorer", "portable_scorer", "RemoteJudgeStep", "RemoteCodeStep", "RemoteTarget", "QuietTaskRuns",
           "worker_transport", "RunContext", "run_task_run")

_BUILT: dict[str, Scorer] = {}  # on a worker: digest -> the scorer, built once per process
_LOCK = threading.Lock()  # a worker runs tasks on many threads
_TRANSPORT: list[WorkerLoopTransport] = []  # on a worker: the one, started at its first request


class WorkerLoopTransport:
    """A ``JudgeTransport``: ``LiteLLMTransport`` on this process's one long-lived event loop (a daemon
    thread), whichever task run's loop asks."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.inner = LiteLLMTransport()
        threading.Thread(target=self.loop.run_forever, name="evalduck-worker-judge-loop", daemon=True).start()

    async def request(self, *args: Any, **kwargs: Any) -> tuple[str | None, JudgeUsage]:
        future = asyncio.run_coroutine_threadsafe(self.inner.request(*args, **kwargs), self.loop)
        return await asyncio.wrap_future(future)


def worker_transport() -> WorkerLoopTransport:
    with _LOCK:
        if not _TRANSPORT:
            _TRANSPORT.append(WorkerLoopTransport())
        return _TRANSPORT[0]


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

    async def __call__(self) -> StepOutput:
        step = self.scorer.step(self.step_name)
        return await step.arun(self.ctx, transport=worker_transport())  # type: ignore[no-any-return]


@dataclass(frozen=True)
class RemoteCodeStep:
    """One code step over a chunk of items, on the worker."""

    scorer: PortableScorer
    step_name: str
    contexts: list[StepContext]

    async def __call__(self) -> list[dict[str, Any]]:
        from flows.tasks import run_code_step  # flows.tasks imports prefect: on the worker, it is there

        return await run_code_step(self.scorer.step(self.step_name), self.contexts)


@dataclass(frozen=True)
class RemoteTarget:
    """One target call on one item, on the worker (a model target through litellm in the worker)."""

    target: Target
    item: DatasetItem

    async def __call__(self) -> dict[str, Any]:
        return await self.target.acall(self.item, transport=worker_transport())


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
    """On a worker: the task run, as prefect-dask's submit runs it (``run_task_async`` in its own loop, the
    flow's context), with the run's settings entered here instead of rebuilt from the context."""
    from prefect.task_engine import run_task_async

    context = {**run.serialized, "settings_context": {}, "asset_context": asset_context}
    with run.settings():
        return asyncio.run(run_task_async(task=task, task_run_id=task_run_id, parameters=parameters, wait_for=None,
                                          return_type="state", dependencies=dependencies, context=context))


class QuietTaskRuns(WorkerPlugin):  # type: ignore[misc]
    """On each worker, Prefect's two routine lines per task run dropped, by the flow's own rule
    (``flows.runtime.quiet_task_run_info``): without it a worker prints them on its stderr, which for a
    LocalCluster is the user's terminal."""

    name = "evalduck-quiet-task-runs"

    def setup(self, worker: Any) -> None:
        from flows.runtime import quiet_task_run_info

        self._quiet = quiet_task_run_info()
        self._quiet.__enter__()

    def teardown(self, worker: Any) -> None:
        self._quiet.__exit__(None, None, None)
