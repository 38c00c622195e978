"""The baton: waiters are served first come, first served; take/give are idempotent."""

from __future__ import annotations

import asyncio

from flows.baton import Baton


def test_waiters_get_the_baton_in_arrival_order_and_give_is_idempotent() -> None:
    async def scenario() -> list[str]:
        baton = Baton()
        order: list[str] = []
        first = baton.turn()
        await first.take()
        await first.take()  # already held: no deadlock

        async def chain(name: str) -> None:
            turn = baton.turn()
            await turn.take()
            order.append(name)
            await asyncio.sleep(0)  # keeps the baton across an await
            turn.give()
            turn.give()  # a second give is a no-op, not a release of someone else's turn

        tasks = [asyncio.create_task(chain(n)) for n in "abcd"]
        await asyncio.sleep(0.01)
        assert order == []  # all wait while `first` holds it
        first.give()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == ["a", "b", "c", "d"]


def test_a_chain_that_waits_without_the_baton_lets_others_run() -> None:
    async def scenario() -> list[str]:
        baton = Baton()
        events: list[str] = []

        async def slow() -> None:
            turn = baton.turn()
            await turn.take()
            events.append("slow computes")
            turn.give()  # as a task does around its network wait
            await asyncio.sleep(0.05)
            await turn.take()
            events.append("slow resumes")
            turn.give()

        async def fast() -> None:
            await asyncio.sleep(0.01)
            turn = baton.turn()
            await turn.take()
            events.append("fast computes")
            turn.give()

        await asyncio.gather(slow(), fast())
        return events

    assert asyncio.run(scenario()) == ["slow computes", "fast computes", "slow resumes"]
