"""Prefect's routine task-run lines dropped from the logs, in the flow's process and on each Dask worker.

In the engine, not in the run's scope that uses it too: a Dask worker's plugin (portable.py) applies the same
rule, and the engine imports nothing above it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

__all__ = ("quiet_task_run_info",)

_CHATTER = ("Created task run ", "Finished in state ")  # at INFO, the latter is only ever a completed state


class _DropTaskRunChatter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno == logging.INFO and isinstance(record.msg, str) and record.msg.startswith(_CHATTER))


@contextlib.contextmanager
def quiet_task_run_info() -> Iterator[None]:
    """Prefect's two routine lines per task run ("Created task run ...", "Finished in state Completed()"
    or "Cached(...)") are dropped; everything else (a retry, a failed step at ERROR, the flow's own lines)
    still reaches the console and the API. ~1,600 lines for a 200-item judge-bound run, each formatted,
    printed, sent and stored; the UI shows every task run and its state without them (docs/benchmarks.md).
    A level the user set on the ``prefect.task_runs`` logger keeps them."""
    task_runs = logging.getLogger("prefect.task_runs")
    if task_runs.level != logging.NOTSET:
        yield
        return
    chatter = _DropTaskRunChatter()
    task_runs.addFilter(chatter)
    try:
        yield
    finally:
        task_runs.removeFilter(chatter)
