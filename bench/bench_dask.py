"""The judge throughput ceiling, local runner against Dask (by hand; results in docs/benchmarks.md).

The answer-relevancy scorer (3 judge requests per item, one after the other) over ``2 x concurrency``
items (at least 64), against the fake judge in a process of its own with 1 s latency, ``refresh`` on (no
cache hits). The figure is the sustained rate: judge requests of the items completed between 10% and 90%
of the run, divided by that window's duration (the start and the tail excluded). Runners: ``local`` (the
judge child process, the default) and ``dask:N``, a LocalCluster of N worker processes started before
the timed runs (threads per worker for the largest concurrency), reached by its address. The runs
alternate runner by runner for each concurrency, ``--repeat`` times.

Usage: .venv/bin/python bench/bench_dask.py [--concurrency 16 64 256] [--runners local dask:1 dask:2 dask:4]
       [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ["OPENAI_API_KEY"] = "sk-fake-bench"  # before the workers start: they read it from their env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rows(n: int, tag: str) -> list[dict[str, Any]]:
    return [{"id": f"{tag}-{i}", "input": f"How do I reset password {tag} {i}?",
             "output": f"Open page {i}. Click Forgot password."} for i in range(n)]


def _one(runner: str, address: str | None, concurrency: int, base_url: str, workdir: str, tag: str) -> float:
    from flows import run_evals

    items = max(64, 2 * concurrency)
    done: list[float] = []
    extra: dict[str, Any] = {"runner": "dask", "dask_address": address} if address else {}
    run_evals(_rows(items, tag), scorers=[{"id": "answer-relevancy-scorer", "options": {
        "model": "openai/fake-judge", "api_base": base_url, "timeout": 60}}], concurrency=concurrency,
        db=os.path.join(workdir, "evals.duckdb"), cache_dir=os.path.join(workdir, "cache"), refresh=True,
        on_item_complete=lambda _: done.append(time.monotonic()), **extra)
    low, high = int(items * 0.1), int(items * 0.9)
    return 3 * (high - low) / (done[high - 1] - done[low - 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--runners", nargs="+", default=["local", "dask:1", "dask:2", "dask:4"])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    from distributed import LocalCluster

    from flows.engine.dispatch import threads_per_worker

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "scorers.testing.fake_openai", "--port", str(port),
                               "--latency", "1.0"], stdout=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
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
                _one(runner, address, 16, base_url, workdir, f"warm-{runner}")
            for rep in range(args.repeat):
                for concurrency in args.concurrency:
                    order = args.runners if rep % 2 == 0 else list(reversed(args.runners))
                    for runner in order:
                        address = clusters[runner].scheduler_address if runner in clusters else None
                        rate = _one(runner, address, concurrency, base_url, workdir, f"{runner}-{concurrency}-{rep}")
                        results.setdefault((runner, concurrency), []).append(rate)
                        print(f"{runner:7} concurrency {concurrency:3}: {rate:6.1f} judge requests/s "
                              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for cluster in clusters.values():
            cluster.close()
        server.terminate()
        server.wait(10)
    print("\nrunner  concurrency  median req/s  (runs)")
    for (runner, concurrency), rates in results.items():
        print(f"{runner:7} {concurrency:11} {statistics.median(rates):12.1f}  ({', '.join(f'{r:.1f}' for r in rates)})")


if __name__ == "__main__":
    main()
