"""What the step cache record (flows/engine/cache_ledger.py) costs per item, beside the key the run computes
anyway, no flow (by hand; results in docs/benchmarks.md): tone-scorer's analyze step on N rows, min of 5 passes
each of: the cache key alone; a note whose key is the item's last (every later unchanged run); a note whose
key changed (a first run, an edit: the parts' digests); loading and saving the record of N items.

Usage: .venv/bin/python bench/bench_cache_ledger.py [--rows 2000] [--passes 5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evalduck.flows.engine.cache_ledger import CacheLedger
from evalduck.scorers import PREBUILT, ScorerInput, StepContext


def best(passes: int, fn: Callable[[], None]) -> float:
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    step = PREBUILT["tone-scorer"].factory().steps[0]
    contexts = [StepContext(run=ScorerInput(input=f"How do I reset the password of account {i}?",
                                            output=f"Open the sign-in page of account {i} and click Forgot password.",
                                            ground_truth=f"Click Forgot password for account {i}."))
                for i in range(args.rows)]
    keys = [step.cache_key(c) for c in contexts]
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder)

        def key_alone() -> None:
            for c in contexts:
                step.cache_key(c)

        def note(changed: bool) -> Callable[[], None]:
            def run() -> None:
                ledger = CacheLedger(cache, refresh=False)
                book = ledger.step(step)
                if not changed:
                    book.items = {str(i): [k, "", {}] for i, k in enumerate(keys)}
                for i, (c, k) in enumerate(zip(contexts, keys, strict=True)):
                    book.note(str(i), k, True, lambda c=c: ledger.parts(step, c))
            return run

        filled = CacheLedger(cache, refresh=False)
        for i, (c, k) in enumerate(zip(contexts, keys, strict=True)):
            filled.step(step).note(str(i), k, False, lambda c=c: filled.parts(step, c))

        def save() -> None:
            filled.step(step).touched = set(filled.step(step).items)
            filled.save()

        def load() -> None:
            CacheLedger(cache, refresh=False).step(step)

        n = args.rows
        base = best(args.passes, key_alone)
        same, moved = best(args.passes, note(False)), best(args.passes, note(True))
        saved, loaded = best(args.passes, save), best(args.passes, load)
        size = sum(p.stat().st_size for p in (cache / "keys").iterdir())
        print(f"{n} rows, tone-scorer.analyze, min of {args.passes} passes (us per item):")
        print(f"  cache key alone (computed anyway):     {1e6 * base / n:7.1f}")
        print(f"  note, the item's last key (a hit):      {1e6 * same / n:7.1f}")
        print(f"  note, a changed key (parts' digests):  {1e6 * moved / n:7.1f}")
        print(f"  the record's save (at the run's end):  {1e6 * saved / n:7.1f}  ({size / n:.0f} bytes per item)")
        print(f"  the record's load (at the step's first item): {1e6 * loaded / n:7.1f}")


if __name__ == "__main__":
    main()
