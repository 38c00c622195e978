"""A separate process for the multi-process tests: writes a run in batches, or keeps reading.

    python proc_worker.py write DB RUN_ID N_ITEMS BATCH [SLEEP_S] [--resume]
    python proc_worker.py read DB SECONDS

`write` prints `wrote <cells>` after each batch has been committed (so a test can SIGKILL it at a known
point); with --resume it first asks the store which cells are complete and writes only the others,
printing `resumed <cells>`. `read` opens the file and runs queries until SECONDS pass, printing how
often it saw a run marked `interrupted` (`interrupted <n>`), then `reads <n>`.
"""

from __future__ import annotations

import sys
import time

from evalduck.flows.store import ScoreRow, Store

SCORERS = ("alpha", "beta")


def write(db: str, run_id: str, n_items: int, batch: int, sleep_s: float, resume: bool) -> None:
    store = Store(db)
    store.start_run(run_id, f"name-{run_id}", "data.jsonl", "hash", {"n": n_items})
    done = store.completed_cells(run_id) if resume else set()
    todo = [(f"item-{i:05d}", s) for i in range(n_items) for s in SCORERS if (f"item-{i:05d}", s) not in done]
    if resume:
        print(f"resumed {len(todo)}", flush=True)
    written = 0
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        store.write_batch(
            run_id,
            items=[{"item_id": item, "input": f"q {item}"} for item, _ in chunk],
            scores=[ScoreRow(run_id=run_id, item_id=item, scorer_id=s, scorer_version="1", score=int(item[-5:]) % 100 / 100)
                    for item, s in chunk],
        )
        written += len(chunk)
        print(f"wrote {written}", flush=True)
        if sleep_s:
            time.sleep(sleep_s)
    store.finish_run(run_id, "completed")
    print("done", flush=True)


def read(db: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    reads = interrupted = 0
    while time.monotonic() < deadline:
        store = Store(db)  # a fresh open each time, as every `evalduck sql` makes (it checks writers too)
        store.sql("SELECT run_id, count(*) FROM scores GROUP BY run_id")
        store.sql("SELECT * FROM run_scorer_summary")
        interrupted += store.sql("SELECT count(*) FROM runs WHERE status = 'interrupted'").rows[0][0]
        reads += 3
    print(f"interrupted {interrupted}", flush=True)
    print(f"reads {reads}", flush=True)


if __name__ == "__main__":
    mode, db = sys.argv[1], sys.argv[2]
    if mode == "write":
        sleep = float(sys.argv[6]) if len(sys.argv) > 6 and not sys.argv[6].startswith("--") else 0.0
        write(db, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sleep, "--resume" in sys.argv)
    else:
        read(db, float(sys.argv[3]))
