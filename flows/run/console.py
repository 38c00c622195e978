"""What a ``run_evals`` call shows in the caller's terminal, and how its process ends.

The CLI's output, from a script or a notebook: the progress bar on stderr (drawn on a terminal) and the
summary table on stdout, or nothing with ``quiet=True``. Prefect's own console lines below WARNING (flow
run started and finished, its temporary server) are held back as the CLI holds them back; they still reach
the Prefect API and UI through its API log handler, and warnings and errors still show.

At exit: the interpreter's last garbage collections scan every object Prefect, pydantic and litellm made
(300,000-500,000 here): ~1 s, on a busy machine over 3 s, after the script's last line
(docs/benchmarks.md). ``end_promptly`` freezes them out of the collector in an exit handler. Python promises
no finalizer of an object still alive at exit, so nothing it promises is skipped; the DuckDB store and the
files evalduck writes are closed explicitly, before.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import sys
from collections.abc import Iterator
from typing import Any

from rich.console import Console

__all__ = ("shown_run", "print_summary", "end_promptly")

# Where Prefect's logging configuration (prefect/logging/logging.yml) puts its console handler.
_CONSOLE_LOGGERS = ("", "uvicorn", "fastapi")


def _console_handlers() -> list[logging.Handler]:
    from prefect.logging.handlers import PrefectConsoleHandler

    return [h for name in _CONSOLE_LOGGERS for h in logging.getLogger(name).handlers
            if isinstance(h, PrefectConsoleHandler)]


def _hold_back_info() -> list[tuple[logging.Handler, int]]:
    """Prefect's console handlers at WARNING at least; their levels before, to hand back."""
    before = [(h, h.level) for h in _console_handlers()]
    for handler, level in before:
        handler.setLevel(max(level, logging.WARNING))
    return before


@contextlib.contextmanager
def shown_run(quiet: bool) -> Iterator[None]:
    """Around the flow call: Prefect's INFO console lines held back, and the progress bar unless ``quiet``
    or a caller already installed a sink for this context."""
    from evalduck.flows.run.progress import RichProgress, current_sink, use_sink

    before = _hold_back_info()
    try:
        with use_sink(current_sink() or (None if quiet else RichProgress(Console(stderr=True)))):
            yield
    finally:
        for handler, level in before:
            handler.setLevel(level)


def print_summary(result: Any, api_url: str | None) -> None:
    """The CLI's summary, the same table and lines (flows/report/summary.py); a flow run link when ``api_url``
    names a server that outlives this process."""
    from evalduck.flows.report.summary import print_result

    out, err = Console(width=None if sys.stdout.isatty() else 120), Console(stderr=True, soft_wrap=True)
    print_result(out, err, result, api_url, api_url is not None)
    if getattr(result, "status", None) == "budget_exceeded" and result.spend is not None:
        from evalduck.flows.report.text import literal
        from evalduck.flows.run.max_cost import budget_line, cells_done, next_budget

        budget = next_budget(result.spend, result.max_cost, *cells_done(result))
        resume = f"run_evals(..., resume={result.run_id!r}, max_cost={budget:g})"
        err.print(literal(budget_line(result, resume), style="yellow"), highlight=False)


_registered = False


def end_promptly() -> None:
    """Once per process, after its first run. Exit handlers run last registered first: this one runs before
    those registered earlier, Prefect's temporary server stop among them (registered during the first run),
    so that stop's INFO line is held back too."""
    global _registered
    if not _registered:
        _registered = True
        atexit.register(_at_exit)


def _at_exit() -> None:
    _hold_back_info()  # "Stopping temporary server ...": Prefect's, after the script's last line
    gc.freeze()
