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
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

import cloudpickle
from scorers import PREBUILT, ConfigError, JudgeUsage, LiteLLMTransport, Scorer, StepContext, StepOutput, canonical_json

from flows.datasets import DatasetItem
from flows.targets import Target

__all__ = ("PortableScorer", "portable_scorer", "RemoteJudgeStep", "RemoteCodeStep", "RemoteTarget")

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
