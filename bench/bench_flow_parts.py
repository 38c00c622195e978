"""Where benchmark (a)'s time goes: its two halves measured apart, same shape (N items, 3 sequential steps
per item, 16 items in flight, 1 s per step).

  scorer-only:  answer relevancy's `scorer.arun` against the fake judge (1 s latency), no Prefect;
  prefect-only: the flow's judge-step task around a job that sleeps 1 s (no litellm), inside a flow.

Usage: .venv/bin/python bench/bench_flow_parts.py [--items 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import bench_flow as b  # noqa: E402  (sets PREFECT_HOME and quiet logging first)
from prefect import flow  # noqa: E402
from prefect.context import AsyncClientContext  # noqa: E402

from evalduck.flows.config import RunOptions  # noqa: E402
from evalduck.flows.engine.tasks import Job, judge_step_task  # noqa: E402
from evalduck.scorers import Step, StepOutput, create_answer_relevancy_scorer  # noqa: E402

CONCURRENCY, LATENCY = 16, 1.0


def _report(label: str, items: int, wall: float, cpu: float) -> None:
    ideal = items * 3 * LATENCY / CONCURRENCY
    print(f"{label}: {wall:.2f} s for {items} items (ideal {ideal:.2f} s, {wall / ideal:.2f}x); "
          f"process CPU {cpu:.2f} s", flush=True)


async def _scorer_only(url: str, items: int) -> None:
    scorer = create_answer_relevancy_scorer(model="openai/fake-judge", api_base=url)
    rows = b._rows(items, "parts")
    await scorer.arun(input=rows[0]["input"], output=rows[0]["output"])  # imports litellm
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(row: dict[str, str]) -> None:
        async with sem:
            await scorer.arun(input=row["input"], output=row["output"])

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(r) for r in rows))
    _report("scorer-only (no Prefect)", items, time.perf_counter() - wall, time.process_time() - cpu)


async def _sleep_step() -> StepOutput:
    await asyncio.sleep(LATENCY)
    return StepOutput(result={"statements": ["A statement of about forty characters."] * 3}, prompt="p" * 1500)


async def _prefect_only(items: int) -> None:
    step = Step(name="analyze", scorer_id="bench", scorer_version="1", fn=lambda ctx: 1)
    task = judge_step_task(step, RunOptions(), b.WORK / "parts-cache")
    tag = str(time.time())
    async with AsyncClientContext.get_or_create():
        sem = asyncio.Semaphore(CONCURRENCY)

        async def item(i: int) -> None:
            async with sem:
                for k in range(3):
                    state = await task(f"{tag}-{i}-{k}", f"item-{i}", Job(_sleep_step), return_state=True)
                    await state.aresult()

        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(item(i) for i in range(items)))
        _report("prefect-only (tasks, 1 s sleep per step)", items, time.perf_counter() - wall,
                time.process_time() - cpu)


@flow(name="bench-flow-parts")
def prefect_part(items: int) -> None:
    asyncio.run(_prefect_only(items))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=64)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}", flush=True)
    with b._JudgeProcess(LATENCY) as judge:
        asyncio.run(_scorer_only(judge.base_url, args.items))
    prefect_part(args.items)
    print(f"load average after {os.getloadavg()}", flush=True)
