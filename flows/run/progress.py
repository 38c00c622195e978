"""Progress in the terminal: a rich bar the CLI installs for the run (the flow only calls the sink, whose
protocol, ``ProgressSink``, is the engine's: flows/engine/plan.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from evalduck.flows.report.text import literal

if TYPE_CHECKING:
    from evalduck.flows.engine.plan import ProgressSink

__all__ = ("RichProgress", "RichRunBars", "use_sink", "current_sink")


_SINK: ContextVar[ProgressSink | None] = ContextVar("evalduck_progress_sink", default=None)


def current_sink() -> ProgressSink | None:
    """The progress sink the caller installed for this run (None: nothing is drawn)."""
    return _SINK.get()


@contextmanager
def use_sink(sink: ProgressSink | None) -> Iterator[None]:
    """Install ``sink`` for runs started in this context (the CLI's terminal bar)."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
        TextColumn("items"), TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False,
    )


class RichProgress:
    """A rich bar on the terminal: ``items scored ━━━━━━━━━━ 120/200 0:00:21 0:00:14``."""

    def __init__(self, console: Console | None = None, label: str = "scoring") -> None:
        self.console = console or Console(stderr=True)
        self.label = label
        self._progress: Progress | None = None
        self._task: int | None = None

    def start(self, total: int) -> None:
        self._progress = _progress(self.console)
        self._progress.start()
        self._task = self._progress.add_task(self.label, total=total)

    def advance(self, n: int = 1) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, n)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def note(self, message: str) -> None:
        self.console.print(literal(message, style="yellow", multiline=True))


class RichRunBars:
    """A sweep's runs side by side, a bar each on one display that lasts the sweep (rich draws one live display at
    a time): the sweep hands each run ``for_run(name)``, a sink of the engine's protocol. A note that several runs
    give alike (a scorer skipped for want of a judge) is printed once."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = _progress(self.console)
        self._lock = threading.Lock()
        self._shown = False
        self._notes: set[str] = set()

    def __enter__(self) -> RichRunBars:
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._shown:
                self._progress.stop()

    def for_run(self, name: str) -> ProgressSink:
        return _RunBar(self, name)

    def _add(self, name: str, total: int) -> TaskID:
        with self._lock:
            if not self._shown:
                self._progress.start()
                self._shown = True
            return self._progress.add_task(name, total=total)

    def _note(self, message: str) -> None:
        with self._lock:
            if message in self._notes:
                return
            self._notes.add(message)
        self.console.print(literal(message, style="yellow", multiline=True))


class _RunBar:
    def __init__(self, bars: RichRunBars, name: str) -> None:
        self.bars, self.name = bars, name
        self._task: TaskID | None = None

    def start(self, total: int) -> None:
        self._task = self.bars._add(self.name, total)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self.bars._progress.advance(self._task, n)

    def finish(self) -> None:
        self._task = None  # its bar stays, full or where the run stopped, until the sweep's display ends

    def note(self, message: str) -> None:
        self.bars._note(message)
