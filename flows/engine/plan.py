"""What a run is given: ``RunPlan`` (what to compute, frozen once ``evalduck.flows.run.prepare`` built it) and
``EngineServices`` (where its requests, task runs and progress go, chosen by the run's scope); what ``execute``
returns (``Executed``), what it reports per item (``ItemResult``), and how it stops early."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel

from evalduck.errors import EvalduckError
from evalduck.flows.config import RunOptions
from evalduck.flows.inputs.datasets import DatasetItem
from evalduck.flows.inputs.registry import Skipped
from evalduck.flows.inputs.targets import Target
from evalduck.flows.store import ScoreRow, Store
from evalduck.scorers import JudgeTransport, LiteLLMTransport, Scorer, ScorerInput, Step, StepContext

if TYPE_CHECKING:  # types only: this module imports no Prefect, and nothing of the engine below it
    from prefect import Task
    from prefect.states import State

    from evalduck.flows.engine.portable import PortableScorer
    from evalduck.flows.engine.tasks import Job, RateLimiter

__all__ = ("ProgressSink", "Dispatch", "RunPlan", "EngineServices", "Executed", "ItemResult", "ItemState",
           "FailFast", "MisconfiguredRun", "StoreWriteError")


class ProgressSink(Protocol):
    """Where a run reports its progress (the CLI's terminal bar: flows/run/progress.py)."""

    def start(self, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def finish(self) -> None: ...
    def note(self, message: str) -> None: ...


class Dispatch(Protocol):
    """Where a run's task runs execute (evalduck.flows.engine.dispatch: here, or on Dask): runs one task run to
    its final state, and makes the jobs those task runs work on."""

    async def run(self, task: Task[..., Any], parameters: Mapping[str, Any]) -> State[Any]: ...

    def judge_job(self, step: Step, ctx: StepContext, limiter: RateLimiter) -> Job: ...

    def code_job(self, step: Step, contexts: list[StepContext]) -> Job: ...

    def target_job(self, item: DatasetItem) -> Job: ...


class StoreWriteError(EvalduckError, RuntimeError):
    """The store refused the run's results (e.g. the file stayed locked); what was written stays."""


class FailFast(EvalduckError, RuntimeError):
    """``fail_fast``: the first cell that ended in error stops the run."""


class MisconfiguredRun(EvalduckError, RuntimeError):
    """A judge or model request failed the way every request of this run will (``JudgeConfigError``: a bad
    key, an unknown model, an unreachable server, a bad URL): the run stops at the first one instead of
    erroring every cell, one by one, for minutes."""


class ItemResult(BaseModel):
    """What ``on_item_complete`` receives: one item with every scorer's outcome."""

    item_id: str
    input: Any = None
    output: Any = None
    scores: dict[str, float | None]
    statuses: dict[str, str]
    errors: dict[str, str] = {}


@dataclass(frozen=True)
class RunPlan:
    """What a run computes, built and checked by ``evalduck.flows.run.prepare`` before any call is made, and
    frozen from then on: the run's options travel whole (``options``); the rest is what preparing them
    produced. Where its requests and task runs go is not the plan's: that is ``EngineServices``."""

    run_id: str
    items: tuple[DatasetItem, ...]
    scorers: tuple[Scorer, ...]
    skipped: tuple[Skipped, ...]
    target: Target
    store: Store
    options: RunOptions
    cache_dir: Path
    todo: frozenset[tuple[str, str]] | None = None  # None: every cell; else only these (resume)
    on_item_complete: Callable[[ItemResult], Any] | None = None
    # Runner 'dask': each scorer as a worker gets it, by scorer id (made and checked by evalduck.flows.run.prepare).
    portable: Mapping[str, PortableScorer] | None = None

    def wanted(self, item_id: str, scorer_id: str) -> bool:
        return self.todo is None or (item_id, scorer_id) in self.todo

    def samples(self, scorer: Scorer) -> int:
        """How many times ``scorer`` judges each cell: its own ``samples``, else the run's ``judge_samples``;
        a code scorer once (it is deterministic)."""
        if not scorer.is_judge:
            return 1
        return scorer.samples or self.options.judge_samples


@dataclass(frozen=True)
class EngineServices:
    """What ``execute`` is handed besides the plan: where the run's requests, task runs and progress go. The
    run's scope (evalduck.flows.run.scope) picks them for the process the run is in; a plan stays the same
    whichever they are."""

    # Where judge and model requests go: the judge child process, or litellm in this process.
    transport: JudgeTransport = field(default_factory=LiteLLMTransport)
    # Where task runs execute: None, awaited on this loop (LocalDispatch); runner 'dask', a Dask cluster's.
    dispatch: Dispatch | None = None
    sink: ProgressSink | None = None  # the caller's terminal bar (the CLI's, run_evals' unless quiet)
    on_progress: Callable[[int, int], Any] | None = None  # (items done, items in the run): the progress artifact


@dataclass(frozen=True)
class Executed:
    """What a returned ``execute`` tells its caller: every result is stored and the run marked ``status``
    with the last of them (``budget_exceeded``: its budget stopped it, flows/engine/spend.py); ``cache``, each
    step's cache hits and misses, with why each missed (flows/engine/cache_ledger.py); ``spend``, the run's
    spend in USD when it had a budget (``max_cost``)."""

    status: Literal["completed", "budget_exceeded"]
    cache: list[dict[str, Any]]
    spend: float | None = None


@dataclass
class ItemState:
    """One item during the run: its output once known, and its finished cells."""

    item: DatasetItem
    pending: int
    output: Any = None
    rows: dict[str, ScoreRow] = field(default_factory=dict)
    run: ScorerInput | None = None

    def scorer_input(self) -> ScorerInput:
        """Built once per item and shared by its scorers (with the run's cache-key text cached inside)."""
        if self.run is None:
            item = self.item
            self.run = ScorerInput(input=item.input, output=self.output, ground_truth=item.ground_truth,
                                   request_context=item.request_context, context=item.context,
                                   expected_tool=item.expected_tool, expected_tool_order=item.expected_tool_order)
        return self.run
