"""Per-item cost of each code scorer's steps alone, no flow (by hand; results in docs/benchmarks.md).

The rows of bench_flow.py's `(b) --set both` (an agent output: a tool call, its result, the answer), each
scorer's steps run in order on each row with the context the orchestrator builds; min and median of 7
passes over 300 rows, seeds first, so the new scorers compare with tone and textual difference in the same
process.

Usage: .venv/bin/python bench/bench_code_scorers.py [--rows 300] [--passes 7]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from evalduck.scorers import PREBUILT, ScorerInput

SCORERS: list[tuple[str, dict[str, Any] | None]] = [
    ("tone-scorer", None), ("textual-difference-scorer", None), ("completeness-scorer", None),
    ("content-similarity-scorer", None), ("keyword-coverage-scorer", None),
    ("code-tool-call-accuracy-scorer", {"expected_tool": "reset_password"}),
]


def rows(n: int) -> list[ScorerInput]:
    out = []
    for i in range(n):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "reset_password", "arguments": "{}"}}
        out.append(ScorerInput(
            input=f"How do I reset the password of account {i}?",
            output=[{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "content": "link sent"},
                    {"role": "assistant", "content": f"Open the sign-in page of account {i} and click Forgot password. "
                                                     "We email you a link."}],
            ground_truth=f"Click Forgot password on the sign-in page for account {i} and follow the emailed link.",
        ))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--passes", type=int, default=7)
    args = parser.parse_args()
    runs = rows(args.rows)
    for scorer_id, options in SCORERS:
        scorer = PREBUILT[scorer_id].factory(options)
        scorer.run(runs[0])  # loads what the first run loads (VADER's lexicon, the lemma dictionary)
        passes = []
        for _ in range(args.passes):
            started = time.perf_counter()
            for run in runs:
                results: dict[str, Any] = {}
                for step in scorer.steps:
                    assert step.fn is not None
                    results[step.name] = step.fn(scorer.context_for(step.name, run, results))
            passes.append((time.perf_counter() - started) / len(runs) * 1e6)
        print(f"{scorer_id}: min {min(passes):.0f} us, median {statistics.median(passes):.0f} us per item", flush=True)


if __name__ == "__main__":
    main()
