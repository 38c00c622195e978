"""The judge throughput ceiling, local runner against Dask (by hand; results in docs/benchmarks.md).

The answer-relevancy scorer (3 judge requests per item, one after the other) over ``concurrency`` items
(at least 32), against the fake judge (1 s latency; its threads in this process), ``refresh`` on (no cache
hits). The figure is the sustained rate the judge saw: the requests that arrived in the middle 80% of the
span from the first request to the last, divided by that window (the ramp-up and the tail excluded).
Beside it, the CPU milliseconds per judge request of the Dask workers and of this process (the flow, the
fake judge's threads, the Dask client): less sensitive to the machine's load than the rate. Runners:
``local`` (the judge child process, the default) and ``dask:N``, a LocalCluster of N worker processes
started before the timed runs (threads per worker for the largest concurrency), reached by its address.
The runs alternate runner by runner for each concurrency, ``--repeat`` times.

Usage: .venv/bin/python bench/bench_dask.py [--concurrency 16 64 256] [--runners local dask:1 dask:2 dask:4]
       [--repeat 1]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import tempfile
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ["OPENAI_API_KEY"] = "sk-fake-bench"  # before the workers start: they read it from their env


def _rows(n: int, tag: str) -> list[dict[str, Any]]:
    return [{"id": f"{tag}-{i}", "input": f"How do I reset password {tag} {i}?",
             "output": f"Open page {i}. Click Forgot password."} for i in range(n)]


def _workers_cpu(address: str | None) -> float:
    """CPU seconds used so far by the cluster's worker processes (0 without one)."""
    if address is None:
        return 0.0
    from distributed import Client

    with Client(address) as client:
        return sum(client.run(time.process_time).values())


def _one(runner: str, address: str | None, concurrency: int, server: Any, workdir: str, tag: str) -> float:
    from evalduck.flows import run_evals

    items = max(32, concurrency)
    arrivals.clear()
    cpu = _workers_cpu(address), time.process_time()
    extra: dict[str, Any] = {"runner": "dask", "dask_address": address} if address else {}
    run_evals(_rows(items, tag), scorers=[{"id": "answer-relevancy-scorer", "options": {
        "model": "openai/fake-judge", "api_base": server.base_url, "timeout": 120}}], concurrency=concurrency,
        db=os.path.join(workdir, "evals.duckdb"), cache_dir=os.path.join(workdir, "cache"), refresh=True, **extra)
    spent = _workers_cpu(address) - cpu[0], time.process_time() - cpu[1]
    cpu_ms[(runner, concurrency)].append(tuple(1000 * x / len(arrivals) for x in spent))
    first, last = arrivals[0], arrivals[-1]
    low, high = first + 0.1 * (last - first), last - 0.1 * (last - first)
    return sum(low <= t <= high for t in arrivals) / (high - low)


# CPU ms per judge request (workers, this process: the flow, the fake judge's threads, the Dask client)
cpu_ms: collections.defaultdict[tuple[str, int], list[tuple[float, float]]] = collections.defaultdict(list)
arrivals: list[float] = []  # monotonic time of each judge request, recorded by the fake server's responder


def _timed(req: Any) -> Any:
    from evalduck.scorers.testing.fake_openai import default_responder

    arrivals.append(time.monotonic())
    return default_responder(req)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--runners", nargs="+", default=["local", "dask:1", "dask:2", "dask:4"])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    from distributed import LocalCluster

    from evalduck.flows.engine.dispatch import threads_per_worker
    from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer(latency=1.0, responder=_timed).start()
    clusters: dict[str, Any] = {}
    results: dict[tuple[str, int], list[float]] = {}
    try:
        for runner in args.runners:
            if runner.startswith("dask:"):
                n = int(runner.split(":")[1])
                clusters[runner] = LocalCluster(n_workers=n, processes=True, dashboard_address=None, host="127.0.0.1",
                                                threads_per_worker=threads_per_worker(max(args.concurrency), n))
        with tempfile.TemporaryDirectory() as workdir:
            for runner in args.runners:  # warm-up: imports, first connections, workers' litellm
                address = clusters[runner].scheduler_address if runner in clusters else None
                _one(runner, address, 16, server, workdir, f"warm-{runner}")
            for rep in range(args.repeat):
                for concurrency in args.concurrency:
                    order = args.runners if rep % 2 == 0 else list(reversed(args.runners))
                    for runner in order:
                        address = clusters[runner].scheduler_address if runner in clusters else None
                        rate = _one(runner, address, concurrency, server, workdir, f"{runner}-{concurrency}-{rep}")
                        results.setdefault((runner, concurrency), []).append(rate)
                        print(f"{runner:7} concurrency {concurrency:3}: {rate:6.1f} judge requests/s "
                              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for cluster in clusters.values():
            cluster.close()
        server.stop()
    print("\nrunner  concurrency  median req/s  (runs)  CPU ms per request: workers, this process (median)")
    for (runner, concurrency), rates in results.items():
        spent = cpu_ms[(runner, concurrency)]
        workers, here = (statistics.median(x[i] for x in spent) for i in (0, 1))
        print(f"{runner:7} {concurrency:11} {statistics.median(rates):12.1f}  ({', '.join(f'{r:.1f}' for r in rates)})"
              f"  {workers:6.1f} {here:6.1f}")


if __name__ == "__main__":
    main()
