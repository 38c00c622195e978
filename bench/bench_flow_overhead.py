"""What one Prefect task run costs on this machine: a bare cached async task vs the flow's judge-step task
(its name template, retry options, JSON result storage), both awaited 16 at a time on one event loop inside
a flow, as the eval flow does. Prints wall and process CPU per task run.

Usage: .venv/bin/python bench/bench_flow_overhead.py [--tasks 150]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_HOME", str(Path(tempfile.gettempdir()) / "evalduck-bench-prefect-home"))
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")

from prefect import flow, task  # noqa: E402
from prefect.context import AsyncClientContext  # noqa: E402

from evalduck.flows.config import RunOptions  # noqa: E402
from evalduck.flows.engine.tasks import Job, StepCacheKey, judge_step_task  # noqa: E402
from evalduck.scorers import StepOutput  # noqa: E402

WORK = Path(tempfile.mkdtemp(prefix="evalduck-bench-overhead-"))


@task(name="bare", cache_policy=StepCacheKey(), result_storage=WORK / "bare", result_serializer="json",
      persist_result=True)
async def bare(cache_key: str, item_id: str, job: Job) -> dict[str, str]:
    return {"key": cache_key}


async def _output() -> StepOutput:
    return StepOutput(result={"statements": ["A statement of about forty characters."] * 3}, prompt="p" * 1500)


async def _measure(n: int) -> None:
    from evalduck.scorers import Step

    step = Step(name="analyze", scorer_id="bench", scorer_version="1", fn=lambda ctx: 1)
    variants = {"bare cached task": bare, "judge-step task": judge_step_task(step, RunOptions(), WORK / "j")}
    tag = str(time.time())
    async with AsyncClientContext.get_or_create():
        sem = asyncio.Semaphore(16)
        for name, t in variants.items():
            async def one(i: int, t=t, name=name) -> None:
                async with sem:
                    state = await t(f"{name}-{tag}-{i}", f"item-{i}", Job(_output), return_state=True)
                    await state.aresult()

            cpu, wall = time.process_time(), time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(n)))
            print(f"{name}: {(time.perf_counter() - wall) / n * 1000:.1f} ms wall, "
                  f"{(time.process_time() - cpu) / n * 1000:.1f} ms CPU per task run ({n} runs)", flush=True)


@flow(name="bench-task-overhead")
def overhead(n: int) -> None:
    asyncio.run(_measure(n))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=150)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}", flush=True)
    overhead(args.tasks)
    print(f"load average after {os.getloadavg()}", flush=True)
