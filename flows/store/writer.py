"""A background writer that groups results into batches while the previous batch is being written.

Each store write opens the file, commits one transaction and closes it: ~50-150 ms whatever the batch
size (measured in docs/benchmarks.md), so one write per finished cell would cost more than scoring.
`ResultWriter.add` only queues; a thread writes everything queued so far in one `write_batch`, and
whatever arrives meanwhile goes into the next one (group commit). Batches grow by themselves when
results come fast, and a result is durable within about one write's time of being added.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from flows.store.models import ScoreRow
from flows.store.store import Store

__all__ = ("ResultWriter",)


class ResultWriter:
    """Queue items and score cells for one run; a daemon thread writes them in batches.

    `flush()` blocks until everything added before it is committed; `close()` flushes and stops the
    thread (the context manager calls it). A write that fails (e.g. the file stayed locked past the
    retry budget) keeps its rows queued and re-raises in the caller on the next add/flush/close.
    `pause_s` is a gap between writes that lets other processes take the file lock.
    """

    def __init__(self, store: Store, run_id: str, *, pause_s: float = 0.05) -> None:
        self.store = store
        self.run_id = run_id
        self.pause_s = pause_s
        self.batches_written = 0
        self._items: list[Mapping[str, Any]] = []
        self._scores: list[ScoreRow | Mapping[str, Any]] = []
        self._added = 0
        self._written = 0
        self._error: BaseException | None = None
        self._closing = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name=f"evalduck-writer-{run_id}", daemon=True)
        self._thread.start()

    def add(
        self, items: Sequence[Mapping[str, Any]] = (), scores: Sequence[ScoreRow | Mapping[str, Any]] = ()
    ) -> None:
        """Queue rows for writing; returns at once."""
        with self._cond:
            self._raise_pending_error()
            if self._closing:
                raise RuntimeError(f"ResultWriter for run {self.run_id!r} is closed")
            self._items.extend(items)
            self._scores.extend(scores)
            self._added += 1
            self._cond.notify_all()

    def flush(self) -> None:
        """Block until every add() made before this call is committed."""
        with self._cond:
            target = self._added
            while self._written < target and self._error is None and self._thread.is_alive():
                self._cond.wait(0.5)
            self._raise_pending_error()

    def close(self) -> None:
        """Flush and stop the writer thread."""
        try:
            self.flush()
        finally:
            with self._cond:
                self._closing = True
                self._cond.notify_all()
            self._thread.join()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _raise_pending_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not (self._items or self._scores) and not self._closing:
                    self._cond.wait()
                if not (self._items or self._scores) and self._closing:
                    return
                items, scores, upto = self._items, self._scores, self._added
                self._items, self._scores = [], []
            try:
                self.store.write_batch(self.run_id, items=items, scores=scores)
            except BaseException as exc:  # kept for the caller; the rows stay queued
                with self._cond:
                    self._items[:0], self._scores[:0] = items, scores
                    self._error = exc
                    self._cond.notify_all()
                    if self._closing:
                        return
                    self._cond.wait(1.0)
                continue
            with self._cond:
                self._written = upto
                self._error = None  # an earlier failure was retried and has landed
                self.batches_written += 1
                self._cond.notify_all()
            if self.pause_s:
                threading.Event().wait(self.pause_s)
