"""The shared store (DuckLake on PostgreSQL) against the DuckDB file: write throughput and compare_runs on 1M cells.

    .venv/bin/python bench/bench_shared_store.py --db FILE_OR_URL [--batches 20] [--batch 500] [--cells 1000000]

Give it a new file path (duckdb 2.0.1 in .venv, or 1.5.5 in .venv-shared) or a `ducklake:postgres://...`
URL of an empty database (.venv-shared). Prints one line of JSON: per-batch write times of `write_batch`
(items + score cells, as ResultWriter sends them), cells per second, and compare_runs over two runs holding
`--cells` cells together (filled with SQL; timed through Store.compare, median of 3), with the load average.
bench/bench_shared_ab.sh alternates the three set-ups.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import duckdb

from evalduck.flows.store import ScoreRow, Store

SCORERS = ("answer-relevancy-scorer", "tone-scorer", "textual-difference-scorer")


def _fill(store: Store, run_id: str, items: int, shift: float, minutes: int) -> None:
    store.sql("INSERT INTO runs (run_id, name, dataset, dataset_hash, status, started_at, config) VALUES "
              "(?, 'bench', 'b.jsonl', 'h', 'completed', TIMESTAMPTZ '2026-01-01' + to_minutes(?), '{}')",
              [run_id, minutes], write=True)
    store.sql(
        """
        INSERT INTO scores (run_id, item_id, scorer_id, scorer_version, score, status, reason, judge_model,
                            prompt_tokens, completion_tokens, cost, latency_s, created_at)
        SELECT ?, 'item-' || i, s.scorer_id, '1', least(1.0, greatest(0.0, (hash(i, s.scorer_id, ?) % 1000) / 1250 + ?)),
               'scored', 'a reason of some length for the item', 'openai/gpt-4o-mini', 120, 40, 0.0001, 0.5, now()
        FROM range(?) AS t(i), (SELECT unnest(?::VARCHAR[]) AS scorer_id) AS s
        """,
        [run_id, run_id, shift, items, list(SCORERS)], write=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch", type=int, default=500, help="cells per batch (ResultWriter's batch_rows)")
    parser.add_argument("--cells", type=int, default=1_000_000)
    parser.add_argument("--run", default="w", help="run id of the written run (distinct per concurrent writer)")
    args = parser.parse_args()
    load = [os.getloadavg()[0]]
    start = time.perf_counter()
    store = Store(args.db)
    open_s = time.perf_counter() - start
    store.start_run(args.run, "bench", "b.jsonl", "h", {})
    times = []
    writes_start = time.perf_counter()
    for b in range(args.batches):
        ids = [f"item-{b}-{i}" for i in range(args.batch // 2)]
        scores = [ScoreRow(run_id=args.run, item_id=iid, scorer_id=s, scorer_version="1", score=0.5, reason="a short reason",
                           analyze_step_result={"ratio": 0.5, "changes": 3}) for iid in ids for s in SCORERS[:2]]
        begin = time.perf_counter()
        store.write_batch(args.run, items=[{"item_id": iid, "input": f"q {iid}", "output": "a"} for iid in ids], scores=scores)
        times.append(time.perf_counter() - begin)
    write_s = time.perf_counter() - writes_start
    load.append(os.getloadavg()[0])
    per_run = args.cells // (2 * len(SCORERS))
    compare = [0.0]
    if per_run:  # --cells 0: writes only (several of these at once measure concurrent writers)
        _fill(store, f"{args.run}-a", per_run, 0.1, 0)
        _fill(store, f"{args.run}-b", per_run, 0.12, 1)
        compare = []
        for _ in range(3):
            begin = time.perf_counter()
            rows = store.compare(f"{args.run}-a", f"{args.run}-b")
            compare.append(time.perf_counter() - begin)
        assert len(rows) == len(SCORERS) and rows[0]["n_paired"] == per_run, rows
    load.append(os.getloadavg()[0])
    print(json.dumps({
        "db": "ducklake" if args.db.startswith("ducklake:") else "file", "duckdb": duckdb.__version__,
        "run": args.run, "open_s": round(open_s, 3), "write_s": round(write_s, 2),
        "batch_ms_median": round(statistics.median(times) * 1000, 1),
        "batch_ms_min": round(min(times) * 1000, 1), "batch_ms_max": round(max(times) * 1000, 1),
        "cells_per_s": round(args.batch / statistics.median(times)), "compare_cells": per_run * 2 * len(SCORERS),
        "compare_s_median": round(statistics.median(compare), 3), "compare_s_min": round(min(compare), 3),
        "compare_s_max": round(max(compare), 3), "load1": [round(x, 2) for x in load],
    }))


if __name__ == "__main__":
    main()
