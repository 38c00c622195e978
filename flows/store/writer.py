"""A background writer that groups results into batches while the previous batch is being written.

Each store write opens the file, commits one transaction and closes it: tens of ms whatever the batch size, most of
it CPU spent creating the DuckDB instance (docs/benchmarks-history.md, 'Eval flow, third session'), so one write
per finished cell would cost more than scoring. `ResultWriter.add` only queues; a thread writes everything queued
so far in one `write_batch`, and whatever arrives meanwhile goes into the next one (group commit). A few rows wait
up to `interval_s` (default 0.5 s) after the previous write started: a judge-bound run finishes a few cells a
second, and writing them as they came (a handful of rows per write, several writes a second) cost the flow's
process seconds of CPU per run (same section). `batch_rows` rows (default 500) are worth a write at once, so a
chunk of code-scored cells is written while the next chunk computes. A result is durable within about `interval_s`
plus one write of being added; `flush()` and `close()` write at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from evalduck.flows.store.errors import StoreDiskError, StoreLockedError
from evalduck.flows.store.models import SampleRow, ScoreRow
from evalduck.flows.store.store import Store

__all__ = ("ResultWriter",)


class ResultWriter:
    """Queue items and score cells for one run; a daemon thread writes them in batches.

    `flush()` blocks until everything added before it is committed; `close()` flushes and stops the
    thread (the context manager calls it). A write that fails (e.g. the file stayed locked past the
    retry budget) keeps its rows queued and re-raises in the caller on the next add/flush/close.
    `interval_s` is the least time from the start of one write to the start of the next, unless
    `batch_rows` rows are queued or a flush or close asks for one; between writes the file is free for
    other processes.
    """

    def __init__(self, store: Store, run_id: str, *, interval_s: float = 0.5, batch_rows: int = 500) -> None:
        self.store = store
        self.run_id = run_id
        self.interval_s = interval_s
        self.batch_rows = batch_rows
        self.batches_written = 0
        self._items: list[Mapping[str, Any]] = []
        self._scores: list[ScoreRow | Mapping[str, Any]] = []
        self._samples: list[SampleRow] = []
        self._status: str | None = None  # the run's final status, written with the last batch
        self._added = 0
        self._written = 0
        self._error: BaseException | None = None
        self._closing = False
        self._flush_wanted = 0  # flush() calls waiting: write now, without waiting out the interval
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name=f"evalduck-writer-{run_id}", daemon=True)
        self._thread.start()

    def add(
        self, items: Sequence[Mapping[str, Any]] = (), scores: Sequence[ScoreRow | Mapping[str, Any]] = (),
        samples: Sequence[SampleRow] = (),
    ) -> None:
        """Queue rows for writing (a cell's samples with its row: they land in one transaction); returns at once."""
        with self._cond:
            self._raise_pending_error()
            if self._closing:
                raise RuntimeError(f"ResultWriter for run {self.run_id!r} is closed")
            if not (items or scores or samples):  # nothing to wait for: a flush after it must not wait for a write
                return
            self._items.extend(items)
            self._scores.extend(scores)
            self._samples.extend(samples)
            self._added += 1
            self._cond.notify_all()

    def flush(self) -> None:
        """Block until every add() made before this call is committed."""
        with self._cond:
            target = self._added
            self._flush_wanted += 1
            self._cond.notify_all()
            try:
                while self._written < target and self._error is None and self._thread.is_alive():
                    self._cond.wait(0.5)
            finally:
                self._flush_wanted -= 1
            self._raise_pending_error()

    def close(self, status: str | None = None) -> None:
        """Flush and stop the writer thread. `status` (the run's final status, e.g. "completed") lands in
        the same transaction as the last rows: a run's end costs no file open of its own."""
        if status is not None:
            with self._cond:
                self._status = status
                self._added += 1
                self._cond.notify_all()
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

    def _queued(self) -> bool:
        return bool(self._items or self._scores or self._samples or self._status)

    def _raise_pending_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _loop(self) -> None:
        next_write = 0.0  # monotonic time before which no write starts unless flushed
        while True:
            with self._cond:
                while not self._queued() and not self._closing:
                    self._cond.wait()
                while (not (self._closing or self._flush_wanted)
                       and len(self._items) + len(self._scores) + len(self._samples) < self.batch_rows
                       and (wait := next_write - time.monotonic()) > 0):
                    self._cond.wait(wait)
                if not self._queued() and self._closing:
                    return
                items, scores, samples = self._items, self._scores, self._samples
                status, upto = self._status, self._added
                self._items, self._scores, self._samples, self._status = [], [], [], None
            next_write = time.monotonic() + self.interval_s
            try:
                self.store.write_batch(self.run_id, items=items, scores=scores, status=status, samples=samples)
            except BaseException as exc:  # kept for the caller; the rows stay queued
                if isinstance(exc, (StoreLockedError, StoreDiskError)):
                    exc.run_id = self.run_id
                with self._cond:
                    self._items[:0], self._scores[:0], self._samples[:0] = items, scores, samples
                    self._status = self._status or status
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
