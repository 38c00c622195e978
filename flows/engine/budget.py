"""Limits that several runs of one process share: a sweep's candidates run side by side, each on an event loop
of its own thread, under the sweep's one ``concurrency`` (items in flight) and one ``judge_rpm``, so that a sweep
of eight candidates never sends eight times what one run would (docs/sweeps.md).

``Slots`` is a semaphore for coroutines of any event loop, fair between its holders: a freed slot goes to the
holder (a run) that waited longest for its turn, round robin, and within a holder to its oldest waiter. Each run
queues its items in the dataset's order, so the runs advance through the items side by side, and a sweep
stopped part-way has the first items of every candidate, a paired comparison. (A plain FIFO would serve the
first run's items all before the second's, as if they ran one after another.)

``InFlight`` keeps two runs from computing one step at once: a candidate whose steps are another's (the same
cache key) waits for that run's result and reads it from the step cache.

A run finds the budget it shares in ``current_budget()`` (a context variable the sweep sets for each run's
thread); without one it makes its own limits, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import TracebackType

from evalduck.flows.engine.tasks import RateLimiter

__all__ = ("InFlight", "Slots", "SharedBudget", "current_budget", "use_budget")

_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class Slots:
    """At most ``size`` slots held at once by coroutines of any event loop; freed slots go round robin among
    the holders that wait (``holder``: any hashable, e.g. a run id)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"Slots needs at least one slot, got {size}")
        self.size = size
        self._free = size
        self._lock = threading.Lock()
        self._queues: OrderedDict[object, deque[_Waiter]] = OrderedDict()  # holders by turn, each its waiters
        self.held = 0  # slots held now (for tests and progress)
        self.peak = 0  # most slots ever held at once

    def for_holder(self, holder: object) -> _HolderSlot:
        """An ``async with`` context manager that takes one of these slots for ``holder``."""
        return _HolderSlot(self, holder)

    async def acquire(self, holder: object) -> None:
        with self._lock:
            if self._free and not self._queues:
                self._free -= 1
                self._take()
                return
            loop = asyncio.get_running_loop()
            waiter: _Waiter = (loop, loop.create_future())
            self._queues.setdefault(holder, deque()).append(waiter)
        try:
            await waiter[1]
        except asyncio.CancelledError:
            with self._lock:
                queue = self._queues.get(holder)
                if queue is not None and waiter in queue:  # still waiting: leave the queue, hold nothing
                    queue.remove(waiter)
                    if not queue:
                        del self._queues[holder]
                    raise
            if waiter[1].done() and not waiter[1].cancelled():  # handed a slot just before: give it back
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            self.held -= 1
            while self._queues:
                holder, queue = next(iter(self._queues.items()))
                loop, future = queue.popleft()
                del self._queues[holder]
                if queue:  # the holder waits for more: its next turn after the others'
                    self._queues[holder] = queue
                if loop.is_closed():
                    continue
                self._take()
                loop.call_soon_threadsafe(self._hand_over, future)
                return
            self._free += 1

    def _take(self) -> None:
        """One slot held more (the caller holds the lock): a free one, or one handed over by a release."""
        self.held += 1
        self.peak = max(self.peak, self.held)

    def _hand_over(self, future: asyncio.Future[None]) -> None:
        """On the waiter's loop: its slot, unless it stopped waiting meanwhile (then the slot goes on)."""
        if future.cancelled():
            self.release()
        else:
            future.set_result(None)


@dataclass
class _HolderSlot:
    slots: Slots
    holder: object

    async def __aenter__(self) -> None:
        await self.slots.acquire(self.holder)

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.slots.release()


class InFlight:
    """Steps (and target calls) that a run of the sweep is computing, by cache key: another run that needs the
    same key waits for the first to finish, then finds its result in the step cache, instead of asking the judge
    (or the target) the same thing at the same time. The step cache alone only serves what is already stored,
    and runs side by side reach a shared step together."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, list[_Waiter]] = {}

    @contextlib.asynccontextmanager
    async def once(self, key: str) -> AsyncIterator[None]:
        """Around computing ``key``: waits first while another run computes it (then the cache has it)."""
        with self._lock:
            waiters = self._running.get(key)
            if waiters is None:
                self._running[key] = []
            else:
                loop = asyncio.get_running_loop()
                waiter: _Waiter = (loop, loop.create_future())
                waiters.append(waiter)
        if waiters is not None:
            await waiter[1]
            yield  # the first run's result is stored (or it failed, and this run computes it itself)
            return
        try:
            yield
        finally:
            with self._lock:
                woken = self._running.pop(key)
            for loop, future in woken:
                with contextlib.suppress(RuntimeError):  # that run's loop closed: nobody waits there
                    loop.call_soon_threadsafe(_wake, future)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


@dataclass
class SharedBudget:
    """What a sweep's runs share: items in flight and the judge's requests per minute; each run's main task, so
    that stopping the sweep stops every run (``cancel_all``); and a start line, so that no run of a group takes
    an item before every run of the group is ready (a run whose set-up is quicker would otherwise score all its
    items first, and a sweep stopped then would not be paired)."""

    slots: Slots
    limiter: RateLimiter
    in_flight: InFlight = field(default_factory=InFlight)
    _tasks: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[object]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _expected: int = 0
    _arrived: set[int] = field(default_factory=set)  # the threads of the group's runs that are ready, or ended
    _all_here: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False

    def expect(self, runs: int) -> None:
        """A new group of ``runs`` runs, each on a thread of its own: the start line is drawn again."""
        with self._lock:
            self._expected, self._arrived, self._all_here = runs, set(), threading.Event()
            if self.cancelled or runs == 0:
                self._all_here.set()

    def arrive(self) -> None:
        """The calling thread's run is ready to take items, or ended (a kept run, a set-up that failed)."""
        with self._lock:
            self._arrived.add(threading.get_ident())
            if len(self._arrived) >= self._expected:
                self._all_here.set()

    async def register(self) -> None:
        """The calling run's task, cancelled by ``cancel_all`` (at once if the sweep was stopped already); returns
        once every run of the group is ready."""
        task = asyncio.current_task()
        with self._lock:
            if task is not None:
                self._tasks.append((asyncio.get_running_loop(), task))
            stopped, all_here = self.cancelled, self._all_here
        if stopped and task is not None:
            task.cancel()
        self.arrive()
        await asyncio.to_thread(all_here.wait)

    def cancel_all(self) -> None:
        """Stop every run (thread-safe): each run's task is cancelled on its own loop and ends `cancelled`."""
        with self._lock:
            self.cancelled = True
            tasks = list(self._tasks)
            self._all_here.set()  # a run waiting at the start line goes on, to be cancelled
        for loop, task in tasks:
            with contextlib.suppress(RuntimeError):  # that run's loop already closed: it ended
                loop.call_soon_threadsafe(task.cancel)


_BUDGET: ContextVar[SharedBudget | None] = ContextVar("evalduck_shared_budget", default=None)


def current_budget() -> SharedBudget | None:
    """The budget the calling run shares with others (a sweep's), if any."""
    return _BUDGET.get()


@contextlib.contextmanager
def use_budget(budget: SharedBudget) -> Iterator[SharedBudget]:
    """Runs started in this context (and threads started with a copy of it) share ``budget``."""
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)
