"""Turn-taking for the CPU work of the items in flight on the run's one event loop.

Why: every judge step costs ~15-30 ms of CPU on the loop (Prefect's task-run bookkeeping, parsing the
answer) around one long network wait. asyncio interleaves coroutines at every ``await``, so answers that
arrive together are processed side by side and all finish at the end of the burst: with 16 items in
flight, each step waited for the CPU work of all 16 (~0.2-0.5 s per step measured), and since they then
sent their next requests together, the next answers arrived together again, for the whole run.

With a baton, a chain (one item's target call, or one item's judge scorer) holds the baton while it
computes and hands it on while it waits on the network. Waiters are served first come, first served
(``asyncio.Lock`` is fair), so a burst is worked off one chain at a time: the first chain's next request
leaves after its own few ms, not after everyone's, and the next answers arrive spread out.
"""

from __future__ import annotations

import asyncio

__all__ = ("Baton", "Turn")


class Baton:
    """One per run, shared by all chains."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    def turn(self) -> "Turn":
        return Turn(self._lock)


class Turn:
    """One chain's hold on the baton; ``take``/``give`` are idempotent, so every path may call them."""

    __slots__ = ("_lock", "held")

    def __init__(self, lock: asyncio.Lock) -> None:
        self._lock = lock
        self.held = False

    async def take(self) -> None:
        if not self.held:
            await self._lock.acquire()
            self.held = True

    def give(self) -> None:
        if self.held:
            self.held = False
            self._lock.release()
