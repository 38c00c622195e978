"""The one batcher of the engine: items queue up and one batch at a time runs over them.

Two regimes, one class:

- ``max_size=N`` (code-only scorers): items whose output is known gather into chunks of ``chunk_size``
  in arrival order (dataset order when there is no target), so a chunk's cache key recurs across runs; the
  rest runs when the input is closed.
- ``max_size=None`` (a judge scorer's code step, e.g. ``generate_score``): whatever has queued runs as soon
  as the previous batch is done, and items arriving meanwhile gather for the next one (group commit). The
  UI still shows the step as a task, and a step that takes microseconds does not pay a task run (~15 ms)
  per item.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

__all__ = ("StepBatcher",)

T = TypeVar("T")
R = TypeVar("R")

Spawn = Callable[[Coroutine[Any, Any, None]], "asyncio.Task[None]"]


class StepBatcher(Generic[T, R]):
    """``submit`` waits for its item's result; ``put`` only queues (the batch function handles the
    results itself). One batch runs at a time; an exception of the batch function ends the worker and
    reaches whoever awaits ``close`` (or the task group that ``spawn`` puts the worker in)."""

    def __init__(self, run_batch: Callable[[list[T]], Awaitable[list[R]]], *, max_size: int | None = None,
                 spawn: Spawn | None = None) -> None:
        self.run_batch = run_batch
        self.max_size = max_size
        self.spawn: Spawn = spawn or asyncio.create_task
        self.queue: list[tuple[T, asyncio.Future[R] | None]] = []
        self.worker: asyncio.Task[None] | None = None
        self.closed = False
        self.failure: BaseException | None = None

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._add(item, future)
        return await future

    def put(self, item: T) -> None:
        self._add(item, None)

    async def close(self) -> None:
        """No more items: run what is queued, and wait for the worker."""
        self.closed = True
        self._wake()
        while self.worker is not None:
            await asyncio.shield(self.worker)
        if self.failure is not None:
            raise self.failure

    def _add(self, item: T, future: asyncio.Future[R] | None) -> None:
        if self.closed:
            raise RuntimeError("the batcher is closed")
        self.queue.append((item, future))
        self._wake()

    def _ready(self) -> bool:
        return bool(self.queue) and (self.max_size is None or self.closed or len(self.queue) >= self.max_size)

    def _wake(self) -> None:
        if self.worker is None and self._ready():
            self.worker = self.spawn(self._drain())

    async def _drain(self) -> None:
        batch: list[tuple[T, asyncio.Future[R] | None]] = []
        try:
            while self._ready():
                size = len(self.queue) if self.max_size is None else self.max_size
                batch, self.queue = self.queue[:size], self.queue[size:]
                outs = await self.run_batch([item for item, _ in batch])
                if len(outs) != len(batch):  # a short answer would leave its last futures waiting forever
                    raise RuntimeError(f"a batch of {len(batch)} item(s) gave {len(outs)} result(s)")
                for (_, future), out in zip(batch, outs, strict=True):
                    if future is not None and not future.done():
                        future.set_result(out)
        except Exception as exc:
            self.failure = exc
            raise
        finally:
            self.worker = None
            for _, future in batch:  # cancelled or failed mid-batch: nobody may wait forever
                if future is not None and not future.done():
                    future.cancel()
