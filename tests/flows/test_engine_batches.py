"""The engine's one batcher, both regimes, without Prefect: fixed chunks in arrival order (code-only
scorers), and drain-what-queued (a judge scorer's code steps)."""

from __future__ import annotations

import asyncio

import pytest

from evalduck.flows.engine.batches import StepBatcher


def test_fixed_chunks_keep_arrival_order_and_the_rest_runs_at_close() -> None:
    seen: list[list[int]] = []

    async def run_batch(items: list[int]) -> list[None]:
        seen.append(items)
        return [None] * len(items)

    async def main() -> None:
        batcher: StepBatcher[int, None] = StepBatcher(run_batch, max_size=4)
        for i in range(10):
            batcher.put(i)
        await asyncio.sleep(0)
        assert all(len(batch) == 4 for batch in seen)  # only full chunks before close
        await batcher.close()

    asyncio.run(main())
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_drain_mode_gathers_what_arrived_while_a_batch_ran() -> None:
    seen: list[list[int]] = []
    release = asyncio.Event

    async def main() -> list[int]:
        gate = release()

        async def run_batch(items: list[int]) -> list[int]:
            seen.append(items)
            if len(seen) == 1:
                await gate.wait()
            return [i * 10 for i in items]

        batcher: StepBatcher[int, int] = StepBatcher(run_batch)
        first = asyncio.create_task(batcher.submit(1))
        await asyncio.sleep(0.01)  # the first batch is running, alone
        later = [asyncio.create_task(batcher.submit(i)) for i in (2, 3, 4)]
        await asyncio.sleep(0.01)
        gate.set()
        return [await first] + [await t for t in later]

    assert asyncio.run(main()) == [10, 20, 30, 40]
    assert seen == [[1], [2, 3, 4]]


def test_a_failed_batch_reaches_close_and_nobody_waits_forever() -> None:
    async def run_batch(items: list[int]) -> list[int]:
        raise RuntimeError("chunk broke")

    async def main() -> None:
        batcher: StepBatcher[int, int] = StepBatcher(run_batch)
        waiting = asyncio.create_task(batcher.submit(1))
        await asyncio.sleep(0.01)  # the batch ran and failed before anyone closed the batcher
        with pytest.raises(RuntimeError, match="chunk broke"):
            await batcher.close()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(main())
