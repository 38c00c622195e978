"""`evalduck calibrate` over 1,000 labelled cells of a stored run (issue 26's figure: under 2 s), by hand; results
in docs/benchmarks.md. A results file with one run of N scored judge cells and a labels file for them are made in
a temporary folder; then, each --repeat times: the agreement statistics alone (flows/report/agreement.py, 2,000
bootstrap resamples), and the whole command as a user runs it (`evalduck calibrate LABELS -s S --run RUN`, a
subprocess: interpreter start, imports, reading the cells, statistics, storing the row).

Usage: .venv/bin/python bench/bench_calibrate.py [--cells 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalduck.flows.report.agreement import agreement
from evalduck.flows.store import ScoreRow, Store

SCORER = "hallucination-scorer"


def _make(folder: Path, cells: int) -> tuple[Path, Path]:
    rng = random.Random(0)
    human = [rng.choice((0.0, 0.25, 0.5, 0.75, 1.0)) for _ in range(cells)]
    judge = [min(1.0, max(0.0, h + rng.gauss(0, 0.2))) for h in human]
    store = Store(folder / "evals.duckdb")
    config = {"run_scorers": [{"id": SCORER, "version": "1", "higher_is_better": False, "judge_model": "openai/m",
                               "prompt_fingerprint": "bench"}]}
    store.start_run("bench", "bench", "d.jsonl", "h", config)
    store.write_batch("bench", items=[{"item_id": f"i{i}", "input": f"q{i}", "output": f"a{i}"} for i in range(cells)],
                      scores=[ScoreRow(run_id="bench", item_id=f"i{i}", scorer_id=SCORER, scorer_version="1", score=s)
                              for i, s in enumerate(judge)], status="completed")
    labels = folder / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": f"i{i}", "label": h}) + "\n" for i, h in enumerate(human)))
    return store.path, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="evalduck-bench-calibrate-"))
    db, labels = _make(folder, args.cells)
    print(f"python {sys.version.split()[0]}, load average {os.getloadavg()}, {args.cells} cells in {db}", flush=True)
    rng = random.Random(1)
    pairs = ([rng.random() for _ in range(args.cells)], [rng.choice((0.0, 0.5, 1.0)) for _ in range(args.cells)])
    stats_s, command_s = [], []
    cli = str(Path(sys.executable).with_name("evalduck"))
    for _ in range(args.repeat):
        started = time.perf_counter()
        agreement(*pairs)
        stats_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        done = subprocess.run([cli, "--db", str(db), "calibrate", str(labels), "-s", SCORER, "--run", "bench"],
                              capture_output=True, text=True, cwd=folder)
        command_s.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(done.stderr)
    print(f"agreement statistics, {args.cells} pairs, 2,000 resamples: median {statistics.median(stats_s):.3f} s "
          f"(runs {', '.join(f'{t:.3f}' for t in stats_s)})", flush=True)
    print(f"`evalduck calibrate --run`, {args.cells} cells, whole command: median {statistics.median(command_s):.2f} s "
          f"(runs {', '.join(f'{t:.2f}' for t in command_s)})", flush=True)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
