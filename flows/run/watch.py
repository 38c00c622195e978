"""A run whose Prefect server goes away: its results are in DuckDB, so the user gets one warning line, the
summary and the run's exit status, not minutes of Prefect retrying.

Without this, a server killed mid-run cost a completed run ~35 "EventsWorker failed" ERROR lines (one per
queued event, each after its reconnection attempts), every later API call five retries with backoff (~60 s
each), a ~100-line traceback from the flow's final state and exit 1, and at exit an unbounded drain of the
queued events. ``watch_api`` polls the server while the run goes; once it stops answering, Prefect's client
stops retrying, its workers' failures are kept off the terminal, and at the end their queues are dropped.
``keep_result`` lets the command find the run's result when the flow call fails after the run returned it.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ("ApiWatch", "watch_api", "keep_result", "lost_line", "abandon_prefect_workers")

_POLL_S = 1.0
_MISSES = 3


@dataclass
class _Kept:
    result: Any = None


_KEPT: contextvars.ContextVar[_Kept | None] = contextvars.ContextVar("evalduck_kept_result", default=None)


def _gone(api_url: str) -> bool:
    """Nothing listens at its address any more (connection refused): a server that is only slow or busy, as
    a loaded SQLite server is for seconds, is not gone."""
    try:
        httpx.get(f"{api_url.rstrip('/')}/health", timeout=5.0)
    except httpx.ConnectError:
        return True
    except httpx.HTTPError:
        return False
    return False


def keep_result(result: Any) -> None:
    """Called by the flow body with its result, once every cell is stored (a no-op outside ``watch_api``)."""
    kept = _KEPT.get()
    if kept is not None:
        kept.result = result


class _DropWorkerFailures(logging.Filter):
    """Prefect's events and log workers' "failed to process item" errors, once the server is gone."""

    def __init__(self, lost: threading.Event) -> None:
        super().__init__()
        self.lost = lost

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.lost.is_set() and record.levelno >= logging.WARNING)


@dataclass
class ApiWatch:
    """A run's watch on its Prefect server: whether it was lost, and what was kept off the terminal since."""

    api_url: str
    client_settings: Any = None  # the run's Prefect client settings, taken where its temporary settings apply
    lost: threading.Event = field(default_factory=threading.Event)
    kept: _Kept = field(default_factory=_Kept)

    def check(self) -> bool:
        """True (and the loss handled) when the server does not answer now (or was found gone before)."""
        if not self.lost.is_set() and _gone(self.api_url):
            self._on_loss()
        return self.lost.is_set()

    def _on_loss(self) -> None:
        self.lost.set()
        # Every later call fails at once instead of after five retries with backoff; the settings object is
        # the run's own (its temporary settings), shared by the copies the run makes of it.
        if self.client_settings is not None:
            object.__setattr__(self.client_settings, "max_retries", 0)
        logging.raiseExceptions = False  # Prefect's log worker writes "--- Error logging to API ---" otherwise

    @property
    def result(self) -> Any:
        return self.kept.result


def _poll(watch: ApiWatch, stop: threading.Event) -> None:
    """Gone after ``_MISSES`` refused polls in a row."""
    misses = 0
    while not stop.wait(_POLL_S):
        misses = misses + 1 if _gone(watch.api_url) else 0
        if misses >= _MISSES:
            watch.check()
            return


def abandon_prefect_workers() -> None:
    """Drop what Prefect's events and log workers still hold (the server that would take it is gone) and stop
    them, so that neither the run's end nor the interpreter's exit waits for their reconnection attempts."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for service in (APILogWorker, EventsWorker):
        with service._instance_cache_lock:  # noqa: SLF001 - Prefect has no public way to drop a queue
            instances = list(service._instances.values())  # noqa: SLF001
        for instance in instances:
            with contextlib.suppress(queue.Empty):
                while True:
                    instance._queue.get_nowait()  # noqa: SLF001
                    instance._queue.task_done()  # noqa: SLF001
            instance._stop()  # noqa: SLF001
        service.drain_all(timeout=10)


def lost_line(api_url: str, result: Any) -> str:
    """The one line a run whose server went away after storing its results prints."""
    cells = sum(s["scored"] + s["errored"] + s["skipped"] for s in result.summary["scorers"].values())
    return (f"the Prefect server at {api_url} went away; all {cells} cells of run {result.run_id} are stored in "
            f"{result.db} (its flow run there was not finished)")


@contextlib.contextmanager
def watch_api(api_url: str) -> Iterator[ApiWatch]:
    """Around a run's flow call (inside its Prefect settings): the watch, polled in a thread of its own."""
    from prefect.settings import get_current_settings

    watch = ApiWatch(api_url, get_current_settings().client)
    quiet = _DropWorkerFailures(watch.lost)
    loggers = [logging.getLogger(name) for name in ("prefect._internal.concurrency", "prefect.events.clients")]
    stop = threading.Event()
    poller = threading.Thread(target=_poll, args=(watch, stop), name="evalduck-api-watch", daemon=True)
    token = _KEPT.set(watch.kept)
    raise_exceptions = logging.raiseExceptions
    for logger in loggers:
        logger.addFilter(quiet)
    poller.start()
    try:
        yield watch
    finally:
        stop.set()
        poller.join()
        _KEPT.reset(token)
        if watch.lost.is_set():  # kept quiet for the rest of the process, which ends with the command:
            abandon_prefect_workers()  # the run's last log lines and events start workers of their own
        else:
            for logger in loggers:
                logger.removeFilter(quiet)
            logging.raiseExceptions = raise_exceptions
