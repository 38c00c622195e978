"""What the report costs a run's end: runs of one name with `report` on and off, alternated in one process.

    .venv/bin/python bench/bench_report_run.py [--items 200] [--pairs 4]

Code scorers only (no judge), Prefect's local mode; a first run of each kind warms the process up (the chart
renderer's start in it is measured apart). Prints a Markdown block for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from datetime import datetime

from evalduck.flows.settings import apply_process_defaults


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=4)
    args = parser.parse_args()
    apply_process_defaults()
    os.environ.setdefault("EVALDUCK_EPHEMERAL", "1")
    from evalduck.flows import run_evals

    folder = tempfile.mkdtemp(prefix="bench-report-run-")
    rows = [{"id": f"q{i}", "input": f"Question {i}?", "output": f"A calm answer number {i}, at some length.",
             "groundTruth": f"Answer {i}."} for i in range(args.items)]
    options = {"scorers": ["tone-scorer", "textual-difference-scorer"], "name": "ab", "db": f"{folder}/evals.duckdb",
               "cache_dir": f"{folder}/cache"}

    def timed(report: bool) -> float:
        start = time.perf_counter()
        run_evals(rows, report=report, **options)
        return time.perf_counter() - start

    timed(False)
    first_on = timed(True)  # includes the renderer's start in this process
    on, off = [], []
    for _ in range(args.pairs):
        off.append(timed(False))
        on.append(timed(True))
    load = os.getloadavg()
    print(f"## A run's end with and without its report (`bench/bench_report_run.py`, {datetime.now():%Y-%m-%d})\n")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.\n")
    print(f"Command: `.venv/bin/python bench/bench_report_run.py --items {args.items} --pairs {args.pairs}` "
          f"(runs of {args.items} items x 2 code scorers, one name, alternated in one process)\n")
    print("| run | median s (min-max) |\n| --- | --- |")
    print(f"| report off | {statistics.median(off):.2f} ({min(off):.2f}-{max(off):.2f}) |")
    print(f"| report on | {statistics.median(on):.2f} ({min(on):.2f}-{max(on):.2f}) |")
    print(f"| first run with a report in the process (renderer start) | {first_on:.2f} |")


if __name__ == "__main__":
    main()
