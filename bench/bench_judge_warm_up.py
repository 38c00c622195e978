"""The judge child's warm-up (flows/judge/child.py ``_warm_up``: one mock litellm completion before it serves)
with and without litellm's lazily imported modules imported first, each in a fresh process, alternated. Tells
what preloading those modules (e.g. in the warm starter) would save a judge run's first requests. Results go
to docs/benchmarks.md by hand.

    .venv/bin/python bench/bench_judge_warm_up.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_PROBE = """
import asyncio, importlib, json, os, sys, threading, time
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
for name in ("prefect", "litellm", "evalduck.scorers.judge"):
    importlib.import_module(name)
first = json.loads(sys.argv[1])
started = time.perf_counter()
for name in first:
    importlib.import_module(name)
imported = time.perf_counter() - started
before = set(sys.modules)
from evalduck.flows.judge.child import _warm_up
started = time.perf_counter()
asyncio.run(_warm_up())
print(json.dumps({"import_s": imported, "warm_up_s": time.perf_counter() - started, "threads": threading.active_count(),
                  "new": sorted(m for m in set(sys.modules) - before if m.startswith("litellm"))}))
"""


def _probe(first: list[str]) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(first)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    lazy = _probe([])["new"]
    assert isinstance(lazy, list)
    print(f"litellm modules the first completion imports: {len(lazy)}")
    for i in range(1, rounds + 1):
        plain, preloaded = _probe([]), _probe(lazy)
        print(f"round {i}: warm-up {plain['warm_up_s']:.3f} s as today; {preloaded['warm_up_s']:.3f} s with them imported "
              f"first (their import {preloaded['import_s']:.3f} s, threads after: {preloaded['threads']})")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
