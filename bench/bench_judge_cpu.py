"""CPU of the event loop's thread per judge request, without Prefect (by hand; results in docs/benchmarks.md).

150 answer-relevancy items (3 requests each) through ``scorer.arun``, 16 in flight, against the fake judge
in this process (50 ms latency); the figure is ``time.thread_time()`` of the loop's thread divided by the
requests, so the fake server's own threads do not count. To compare with an older scorers package, put
its folder first on PYTHONPATH (e.g. ``git archive <rev> scorers | tar -x -C /tmp/old``).

Usage: .venv/bin/python bench/bench_judge_cpu.py [--items 150]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-fake-bench")

from evalduck import scorers  # noqa: E402
from evalduck.scorers import ScorerInput, create_answer_relevancy_scorer  # noqa: E402
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer  # noqa: E402


async def _score(scorer: scorers.Scorer, n: int, tag: str) -> None:
    sem = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with sem:
            await scorer.arun(ScorerInput(input=f"How do I reset {tag} {i}?",
                                          output=f"Open page {i}. Click Forgot password."))

    await asyncio.gather(*(one(i) for i in range(n)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=150)
    args = parser.parse_args()
    with FakeOpenAIServer(latency=0.05) as server:
        scorer = create_answer_relevancy_scorer(model="openai/fake-judge", api_base=server.base_url)
        asyncio.run(_score(scorer, 10, "warm"))  # imports litellm, first connections
        server.reset()
        started = time.thread_time()
        asyncio.run(_score(scorer, args.items, "bench"))
        cpu = time.thread_time() - started
    print(f"scorers from {os.path.dirname(scorers.__file__)}: {cpu / server.request_count * 1000:.2f} ms CPU per "
          f"judge request ({server.request_count} requests), load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
