"""Benchmarks of sweeps (by hand; results in docs/benchmarks.md).

  leaderboard: a results file holding one sweep of 10 candidates x 10,000 items x 2 scorers (200,000 cells,
      written by SQL), then the leaderboard's computation timed in this process (its queries and statistics,
      `flows/cli/sweep.py _rows`) and the whole `evalduck leaderboard --format json` command in a fresh process.
  judge: 4 candidates x 200 items of answer relevancy (a `module:function` target per candidate, so no candidate
      reuses another's judge steps), fake judge in its own process with 1 s latency, concurrency 16 shared by the
      runs, which go side by side (`--one-at-a-time`: one after another, as before, for an A/B). The issue's
      floor is 4 x ceil(200 / 16) x 3 requests x 1 s = 156 s (runs one after another); side by side the slots
      never idle between runs, and the floor is ceil(800 / 16) x 3 x 1 s = 150 s.

Usage: .venv/bin/python bench/bench_sweep.py [leaderboard|judge] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORK = Path(tempfile.mkdtemp(prefix="evalduck-bench-sweep-"))
os.environ.setdefault("PREFECT_HOME", str(Path(tempfile.gettempdir()) / "evalduck-bench-prefect-home"))
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
os.environ.setdefault("OPENAI_API_KEY", "sk-fake-bench")
sys.path.insert(0, str(Path(__file__).parent))

CANDIDATES, ITEMS = 10, 10_000


def _fill(db: Path) -> str:
    """One sweep: CANDIDATES runs of ITEMS items scored by two scorers, each candidate a little better."""
    from evalduck.flows.store import Store
    from evalduck.flows.store.sweeps import start_sweep, tag_run

    store = Store(db)
    sweep_id = "bench-sweep"
    start_sweep(store, sweep_id, name="bench", file=None, spec={}, axes={}, baseline="c0", flow_run_id=None)
    for c in range(CANDIDATES):
        run_id = f"run-{c}"
        store.start_run(run_id, f"bench/c{c}", "bench.jsonl", "h", {}, directions={"tone": True, "halluc": False})
        tag_run(store, run_id, sweep_id, f"c{c}", 0)
        store.sql(
            "INSERT INTO scores (run_id, item_id, scorer_id, scorer_version, score, status, created_at, "
            "prompt_tokens, completion_tokens, cost, judge_model) "
            "SELECT ?, 'i' || i, s, '1', least(1, greatest(0, 0.5 + ? * 0.01 + 0.2 * sin(i * 7 + ?))), 'scored', "
            "now(), 100, 10, 0.0001, 'openai/x' FROM range(?) t(i), (VALUES ('tone'), ('halluc')) v(s)",
            [run_id, c, c, ITEMS], write=True)
    return sweep_id


def bench_leaderboard(repeat: int) -> None:
    from evalduck.flows.report.sweep_board import sweep_rows
    from evalduck.flows.store import Store

    db = WORK / "sweep.duckdb"
    t = time.perf_counter()
    sweep_id = _fill(db)
    print(f"filled {CANDIDATES} x {ITEMS:,} x 2 cells in {time.perf_counter() - t:.1f} s", flush=True)
    inner, whole = [], []
    for _ in range(repeat):
        store = Store(db)
        t = time.perf_counter()
        rows = sweep_rows(store, sweep_id, "c0")
        inner.append(time.perf_counter() - t)
        t = time.perf_counter()
        done = subprocess.run([str(Path(sys.executable).with_name("evalduck")), "--db", str(db), "leaderboard",
                               "--format", "json"], capture_output=True, text=True, check=True)
        whole.append(time.perf_counter() - t)
        assert '"format": "evalduck.leaderboard/1"' in done.stdout and len(rows) == 2 * CANDIDATES
    print(f"leaderboard, {CANDIDATES} candidates x {ITEMS:,} items x 2 scorers: computation median "
          f"{statistics.median(inner):.3f} s (runs {', '.join(f'{x:.3f}' for x in inner)}); whole command median "
          f"{statistics.median(whole):.2f} s (runs {', '.join(f'{x:.2f}' for x in whole)})", flush=True)


TARGETS = "".join(f"def t{c}(question):\n    return 'Answer {c}: ' + question\n" for c in range(4))


def bench_judge(items: int, latency: float, concurrency: int, vary: str, one_at_a_time: bool) -> None:
    import json

    from bench_flow import _JudgeProcess, _rows

    import evalduck.flows.sweep_flow as sweep_flow
    from evalduck.flows.sweep_flow import run_sweep

    if one_at_a_time:
        sweep_flow.SIDE_BY_SIDE = 1  # groups of one run: the runs go one after another

    os.chdir(WORK)
    sys.path.insert(0, str(WORK))
    (WORK / "bench_sweep_targets.py").write_text(TARGETS)
    keep = (lambda k: k != "output") if vary == "target" else (lambda k: True)
    (WORK / "data.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if keep(k)}) + "\n"
                                             for r in _rows(items, "sweep")))
    with _JudgeProcess(latency) as judge:
        scorer = ("{id: answer-relevancy-scorer, options: {model: openai/fake-judge, api_base: '"
                  f"{judge.base_url}', timeout: 30}}}}")
        (WORK / "sweep.yaml").write_text(
            f"base:\n  dataset: data.jsonl\n  scorers: [{scorer}]\n  concurrency: {concurrency}\n"
            "  report: false\naxes:\n" + (
                "  target: [" + ", ".join(f"'bench_sweep_targets:t{c}'" for c in range(4)) + "]\n" if vary == "target"
                else "  answer-relevancy-scorer.temperature: [0.0, 0.1, 0.2, 0.3]\n"))
        warm = WORK / "warm.yaml"
        (WORK / "warm.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(2, "warm")))
        warm.write_text(f"base:\n  dataset: warm.jsonl\n  scorers: [tone-scorer, {scorer}]\n"
                        f"  db: {WORK / 'warm.duckdb'}\n  report: false\nrepeat: 2\n")
        run_sweep(str(warm))  # Prefect's local server up, the judge's child and litellm imported, as bench_flow.py
        judge.ask("reset")
        t = time.perf_counter()
        result = run_sweep("sweep.yaml", db=str(WORK / "judge.duckdb"))
        took = time.perf_counter() - t
        requests = judge.ask("count")
    floor = 4 * -(-items // concurrency) * 3 * latency
    how = "one after another" if one_at_a_time else "side by side"
    print(f"sweep of 4 candidates x {items} items ({how}), answer relevancy, latency {latency}s, concurrency {concurrency}: "
          f"{took:.2f} s, {requests} requests, status {result.status}; floor {floor:.0f} s; run / floor "
          f"{took / floor:.3f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", choices=["leaderboard", "judge"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--vary", choices=["target", "temperature"], default="target",
                        help="judge: what sets the candidates apart: a target per candidate (a target task per item, "
                             "as a sweep of models has), or the judge's temperature (outputs in the dataset, as (a) of "
                             "bench_flow.py)")
    parser.add_argument("--one-at-a-time", action="store_true", help="judge: the runs one after another (A/B)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    if args.which == "leaderboard":
        bench_leaderboard(args.repeat)
    else:
        bench_judge(args.items, args.latency, args.concurrency, args.vary, args.one_at_a_time)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
