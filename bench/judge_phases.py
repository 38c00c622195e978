"""Where a judge-bound run's time over its floor goes, read from the fake judge's side: a fake judge (1 s
latency) that logs each request's arrival, and the phases of one run computed from that log.

    python bench/judge_phases.py serve LOG          # prints its base URL, serves until killed
    python bench/judge_phases.py phases LOG T0 T1   # T0/T1: the run's process start and exit (epoch s)

Phases: process start to the first request; the span from the first request to the last answer (the floor
is 13 waves x 3 steps x 1 s = 39 s for bench/judge_workload.sh); the last answer to exit; and the gaps
inside the span: between an item's steps, and from an item's last answer to the start of the item that
takes its slot (the 17th item after the 1st, ...). Used by bench/bench_judge_phases.sh.
"""

from __future__ import annotations

import collections
import json
import re
import sys
import threading
import time
from itertools import pairwise
from typing import Any

LATENCY_S = 1.0
CONCURRENCY = 16


def serve(log_path: str) -> None:
    from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, request_step

    log = open(log_path, "a", buffering=1)
    lock = threading.Lock()

    class Logged(FakeOpenAIServer):
        def _next_reply(self, req: dict[str, Any]) -> Any:
            arrived = time.time()
            item = re.search(r"account (\d+)", json.dumps(req))  # the workload's items name their account
            with lock:
                log.write(f"{arrived:.4f} {request_step(req)} {item.group(1) if item else '?'}\n")
            return super()._next_reply(req)

    with Logged(latency=LATENCY_S) as server:
        print(server.base_url, flush=True)
        while True:
            time.sleep(3600)


def _summary(values: list[float]) -> str:
    values = sorted(values)
    n = len(values)
    return f"mean {1000 * sum(values) / n:.0f} ms, median {1000 * values[n // 2]:.0f}, p90 {1000 * values[int(n * .9)]:.0f}"


def phases(log_path: str, t0: float, t1: float) -> None:
    rows = [(float(t), step, item) for t, step, item in (line.split() for line in open(log_path))]
    rows = [r for r in rows if t0 <= r[0] <= t1]
    by_item: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for t, step, item in rows:
        by_item[item].append((t, step))
    gaps: dict[str, list[float]] = collections.defaultdict(list)
    starts, ends = [], []
    for steps in by_item.values():
        steps.sort()
        for (a, s1), (b, s2) in pairwise(steps):
            gaps[f"{s1} -> {s2}"].append(b - a - LATENCY_S)
        starts.append(steps[0][0])
        ends.append(steps[-1][0] + LATENCY_S)
    starts.sort()
    ends.sort()
    print(f"  {len(rows)} requests, {len(by_item)} items; start -> first request {starts[0] - t0:.2f} s; "
          f"span {ends[-1] - starts[0]:.2f} s; last answer -> exit {t1 - ends[-1]:.2f} s")
    for name, values in gaps.items():
        print(f"  gap {name}: {_summary(values)}")
    handoffs = [starts[i] - ends[i - CONCURRENCY] for i in range(CONCURRENCY, len(starts))]
    if handoffs:
        print(f"  gap item -> next item in its slot: {_summary(handoffs)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"] and len(sys.argv) == 3:
        serve(sys.argv[2])
    elif sys.argv[1:2] == ["phases"] and len(sys.argv) == 5:
        phases(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
