"""Progress in the terminal: a rich bar the CLI installs for the run (the flow only calls the sink, whose
protocol, ``ProgressSink``, is the engine's: flows/engine/plan.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from evalduck.flows.report.text import literal

if TYPE_CHECKING:
    from evalduck.flows.engine.plan import ProgressSink

__all__ = ("RichProgress", "use_sink", "current_sink")


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


class RichProgress:
    """A rich bar on the terminal: ``items scored ━━━━━━━━━━ 120/200 0:00:21 0:00:14``."""

    def __init__(self, console: Console | None = None, label: str = "scoring") -> None:
        self.console = console or Console(stderr=True)
        self.label = label
        self._progress: Progress | None = None
        self._task: int | None = None

    def start(self, total: int) -> None:
        self._progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
            TextColumn("items"), TimeElapsedColumn(), TimeRemainingColumn(), console=self.console, transient=False,
        )
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
