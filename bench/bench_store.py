"""Benchmark of the results store: compare_runs on 2 x 100,000 items x 3 scorers, and write throughput.

    .venv/bin/python bench/bench_store.py [--items 100000] [--repeat 5]

Prints a Markdown block for docs/benchmarks.md (machine, load, command, figures). Timings are
wall-clock medians; the machine may be shared, so the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from evalduck.flows.store import ResultWriter, ScoreRow, Store

SCORERS = ("answer-relevancy-scorer", "tone-scorer", "textual-difference-scorer")


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _fill(path: Path, run_id: str, items: int, shift: float, minutes: int) -> None:
    """Bulk-load a run with SQL (setup only; write throughput is measured separately below)."""
    con = duckdb.connect(str(path))
    con.execute(
        "INSERT INTO runs (run_id, name, dataset, dataset_hash, status, started_at, config) "
        "VALUES (?, 'bench', 'bench.jsonl', 'h', 'completed', TIMESTAMPTZ '2026-01-01' + to_minutes(?), '{}')",
        [run_id, minutes],
    )
    con.execute(
        """
        INSERT INTO scores (run_id, item_id, scorer_id, scorer_version, score, status, reason,
                            analyze_step_result, judge_model, prompt_tokens, completion_tokens, cost, latency_s, created_at)
        SELECT ?, 'item-' || i, s.scorer_id, '1',
               CASE WHEN hash(i, s.scorer_id) % 50 = 0 THEN NULL
                    ELSE least(1.0, greatest(0.0, (hash(i, s.scorer_id, ?) % 1000) / 1250 + ?)) END,
               CASE WHEN hash(i, s.scorer_id) % 50 = 0 THEN 'error' ELSE 'scored' END,
               'a reason of some length for the item',
               '{"ratio": 0.5, "changes": 3}', 'openai/gpt-4o-mini', 120, 40, 0.0001, 0.5, now()
        FROM range(?) AS t(i), (SELECT unnest(?::VARCHAR[]) AS scorer_id) AS s
        """,
        [run_id, run_id, shift, items, list(SCORERS)],
    )
    con.close()


def bench_compare(items: int, repeat: int, folder: Path) -> dict[str, float]:
    path = folder / "compare.duckdb"
    store = Store(path)
    _fill(path, "run-a", items, 0.1, 0)
    _fill(path, "run-b", items, 0.12, 1)
    con = duckdb.connect(str(path), read_only=True)
    in_sql = _median_ms(lambda: con.execute("SELECT * FROM compare_runs('run-a', 'run-b')").fetchall(), repeat)
    deltas = _median_ms(
        lambda: con.execute("SELECT * FROM item_deltas('run-a', 'run-b', 'tone-scorer') LIMIT 20").fetchall(), repeat
    )
    con.close()
    via_store = _median_ms(lambda: store.compare("previous", "latest"), repeat)
    return {"compare_sql_ms": in_sql, "compare_store_ms": via_store, "item_deltas_ms": deltas,
            "file_mb": path.stat().st_size / 1e6}


def _rows(run_id: str, items: int, scorers: int) -> list[ScoreRow]:
    rng = random.Random(0)
    return [
        ScoreRow(run_id=run_id, item_id=f"item-{i}", scorer_id=f"scorer-{s}", scorer_version="1",
                 score=rng.random(), reason="a short reason",
                 analyze_step_result={"ratio": 0.5, "changes": 3, "lengthDiff": 0.1, "confidence": 0.9})
        for i in range(items) for s in range(scorers)
    ]


def bench_writes(folder: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    start = time.perf_counter()
    rows = _rows("w", 2000, 2)
    out["scorerow_build_ms_4000"] = (time.perf_counter() - start) * 1000
    items = [{"item_id": f"item-{i}", "input": f"question {i}", "output": f"answer {i}"} for i in range(2000)]
    for batches in (1, 10, 100):
        store = Store(folder / f"writes-{batches}.duckdb")
        store.start_run("w", "bench", "b.jsonl", "h", {})
        size = 4000 // batches
        start = time.perf_counter()
        for b in range(batches):
            chunk = rows[b * size : (b + 1) * size]
            store.write_batch("w", items=items[b * size // 2 : (b + 1) * size // 2], scores=chunk)
        out[f"write_batch_{batches}x{size}_total_ms"] = (time.perf_counter() - start) * 1000
    store = Store(folder / "writer.duckdb")
    store.start_run("w", "bench", "b.jsonl", "h", {})
    start = time.perf_counter()
    with ResultWriter(store, "w") as writer:
        for i in range(2000):  # one add per finished item (2 cells), as a flow would
            writer.add(items=[items[i]], scores=rows[2 * i : 2 * i + 2])
    out["result_writer_2000_adds_total_ms"] = (time.perf_counter() - start) * 1000
    out["result_writer_batches"] = writer.batches_written
    store = Store(folder / "writes-1.duckdb")
    out["rewrite_4000_ms"] = _median_ms(lambda: store.write_scores("w", rows), 3)
    big = Store(folder / "big.duckdb")
    big.start_run("big", "bench", "b.jsonl", "h", {})
    big_rows = _rows("big", 100_000, 3)
    start = time.perf_counter()
    for b in range(0, len(big_rows), 30_000):
        big.write_scores("big", big_rows[b : b + 30_000])
    out["write_300k_cells_s"] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalduck-bench-") as tmp:
        load_before = os.getloadavg()
        compare = bench_compare(args.items, args.repeat, Path(tmp))
        writes = bench_writes(Path(tmp))
        load_after = os.getloadavg()
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"duckdb {duckdb.__version__}")
    print(f"load average (1/5/15 min) before: {load_before[0]:.2f}/{load_before[1]:.2f}/{load_before[2]:.2f}, "
          f"after: {load_after[0]:.2f}/{load_after[1]:.2f}/{load_after[2]:.2f}")
    print(f"compare_runs, 2 runs x {args.items:,} items x 3 scorers (median of {args.repeat}):")
    for key, value in compare.items():
        print(f"  {key}: {value:.1f}")
    print("writes:")
    for key, value in writes.items():
        print(f"  {key}: {value:.1f}")


if __name__ == "__main__":
    main()
