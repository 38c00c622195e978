"""The limits a sweep's runs share (flows/engine/budget.py), each run on an event loop of its own thread: never more
slots held than there are, freed slots round robin between runs, a cancelled waiter loses no slot, and the start
line that lets a group of runs take their first items together."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

from evalduck.flows.engine.budget import SharedBudget, Slots
from evalduck.flows.engine.tasks import RateLimiter


def on_threads(*mains: Callable[[], Coroutine[Any, Any, Any]]) -> list[Any]:
    """Each coroutine function run by asyncio.run on a thread of its own, as a sweep's runs are; their results."""
    results: list[Any] = [None] * len(mains)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = asyncio.run(mains[i]())
        except BaseException as exc:  # noqa: BLE001 - raised below, in the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(mains))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    return results


def test_never_more_held_than_there_are_slots_across_loops() -> None:
    slots = Slots(3)
    rng = random.Random(7)

    def run(holder: str) -> Callable[[], Coroutine[Any, Any, int]]:
        async def main() -> int:
            async def item() -> None:
                async with slots.for_holder(holder):
                    assert slots.held <= slots.size
                    await asyncio.sleep(rng.random() / 500)

            await asyncio.gather(*(item() for _ in range(40)))
            return slots.peak

        return main

    on_threads(run("a"), run("b"), run("c"), run("d"))
    assert slots.peak == 3 and slots.held == 0


def test_freed_slots_go_round_robin_between_runs() -> None:
    """Run a queues all its items before run b queues any; with one slot they still take turns. a's first item
    holds the slot until b's items wait too, so the order does not depend on how fast the threads start."""
    slots = Slots(1)
    order: list[str] = []
    a_queued, b_queued = threading.Event(), threading.Event()

    def run(holder: str) -> Callable[[], Coroutine[Any, Any, None]]:
        async def main() -> None:
            if holder == "b":
                await asyncio.to_thread(a_queued.wait, 30)

            async def item(first: bool) -> None:
                async with slots.for_holder(holder):
                    order.append(holder)
                    if first and holder == "a":
                        await asyncio.to_thread(b_queued.wait, 30)

            tasks = [asyncio.create_task(item(i == 0)) for i in range(5)]
            await asyncio.sleep(0.05)  # every item of this run holds the slot or waits for it now
            (a_queued if holder == "a" else b_queued).set()
            await asyncio.gather(*tasks)

        return main

    on_threads(run("a"), run("b"))
    assert order == ["a", "a", "b", "a", "b", "a", "b", "a", "b", "b"], order


def test_a_cancelled_waiter_loses_no_slot() -> None:
    slots = Slots(1)

    async def main() -> None:
        async with slots.for_holder("a"):
            waiting = asyncio.create_task(slots.acquire("b"))
            await asyncio.sleep(0.01)
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
        async with slots.for_holder("c"):  # the slot is free again
            assert slots.held == 1

    asyncio.run(main())
    assert slots.held == 0


def test_a_group_starts_together_and_cancel_all_stops_every_run() -> None:
    budget = SharedBudget(Slots(2), RateLimiter(None))
    budget.expect(2)
    started: list[str] = []
    late = threading.Event()
    t0 = time.monotonic()
    at: dict[str, float] = {}

    def run(name: str, delay: float) -> Callable[[], Coroutine[Any, Any, str]]:
        async def main() -> str:
            await asyncio.sleep(delay)
            if name == "late":
                late.set()
            await budget.register()
            at[name] = time.monotonic() - t0
            started.append(name)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                return f"{name} cancelled"
            return f"{name} finished"

        return main

    def stop_when_both_started() -> None:
        late.wait(10)
        while len(started) < 2:
            threading.Event().wait(0.01)
        budget.cancel_all()

    stopper = threading.Thread(target=stop_when_both_started)
    stopper.start()
    results = on_threads(run("early", 0.0), run("late", 0.3))
    stopper.join(10)
    assert results == ["early cancelled", "late cancelled"]
    assert at["early"] >= 0.3  # it was ready at once, and waited at the start line for the late one
