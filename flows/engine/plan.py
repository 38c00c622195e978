"""What a run is given (``RunPlan``), what it reports per item (``ItemResult``), and how it stops early."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from evalduck.errors import EvalduckError
from evalduck.flows.config import RunOptions
from evalduck.flows.inputs.datasets import DatasetItem
from evalduck.flows.inputs.registry import Skipped
from evalduck.flows.inputs.targets import Target
from evalduck.flows.store import ScoreRow, Store
from evalduck.scorers import JudgeTransport, LiteLLMTransport, Scorer, ScorerInput

if TYPE_CHECKING:
    from evalduck.flows.engine.dispatch import Dispatch
    from evalduck.flows.engine.portable import PortableScorer

__all__ = ("ProgressSink", "RunPlan", "ItemResult", "ItemState", "FailFast", "MisconfiguredRun", "StoreWriteError")


class ProgressSink(Protocol):
    """Where a run reports its progress (the CLI's terminal bar: flows/run/progress.py)."""

    def start(self, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def finish(self) -> None: ...
    def note(self, message: str) -> None: ...


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


@dataclass
class RunPlan:
    """Everything ``execute`` needs, built and checked by ``evalduck.flows.run.prepare`` before any call is made. The
    run's options travel whole (``options``); the rest is what preparing them produced."""

    run_id: str
    items: list[DatasetItem]
    scorers: list[Scorer]
    skipped: list[Skipped]
    target: Target
    store: Store
    options: RunOptions
    cache_dir: Path
    todo: set[tuple[str, str]] | None = None  # None: every cell; else only these (resume)
    on_item_complete: Callable[[ItemResult], Any] | None = None
    on_progress: Callable[[int, int], Any] | None = None
    sink: ProgressSink | None = None
    # Where the run's judge and model requests go (the flow picks litellm here or the judge child process).
    transport: JudgeTransport = field(default_factory=LiteLLMTransport)
    # Where its task runs execute (evalduck.flows.engine.dispatch): None, this process; the flow sets Dask's.
    dispatch: Dispatch | None = None
    # Runner 'dask': each scorer as a worker gets it, by scorer id (made and checked by evalduck.flows.run.prepare).
    portable: Mapping[str, PortableScorer] | None = None

    def wanted(self, item_id: str, scorer_id: str) -> bool:
        return self.todo is None or (item_id, scorer_id) in self.todo


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
