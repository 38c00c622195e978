"""Micro-benchmark of step cache keys (by hand; results in docs/benchmarks.md).

The keys benchmark (b) computes: per item one ``ScorerInput`` shared by its scorers, and for each step of
tone and textual difference a context and its key, with the earlier steps' real results. Also the judge
steps of answer relevancy, whose keys hold the judge settings and output schema. Contexts are built
outside the timed part (fresh ones each repeat, so nothing cached on a run carries over); only
``step.cache_key(ctx)`` is timed. Run it against another checkout with ``PYTHONPATH=<checkout>``.

Usage: .venv/bin/python bench/bench_cache_key.py [--items 2000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from evalduck import scorers
from evalduck.scorers import (
    ScorerInput,
    StepContext,
    create_answer_relevancy_scorer,
    create_textual_difference_scorer,
    create_tone_scorer,
)
from evalduck.scorers._context import STEP_ORDER


def _row(i: int) -> dict[str, str]:
    """The rows of bench/bench_flow.py."""
    return {
        "input": f"How do I reset the password of account {i}?",
        "output": f"Open the sign-in page of account {i} and click Forgot password. We email you a link.",
        "groundTruth": f"Click Forgot password on the sign-in page for account {i} and follow the emailed link.",
    }


def _code_results(scorer: Any, run: ScorerInput) -> dict[str, Any]:
    """Each code step's real result on ``run``, in order (what the flow's chunks compute)."""
    results: dict[str, Any] = {}
    score = None
    for step in scorer.steps:
        ctx = scorer.context_for(step.name, run, results, score)
        results[step.name] = step.fn(ctx)
        if step.name == "generate_score":
            score = results[step.name]
    return results


RELEVANCY_RESULTS = {
    "preprocess": {"statements": ["Open the sign-in page and click Forgot password.", "We email you a link."]},
    "analyze": {"results": [{"result": "yes", "reason": "Answers it."}, {"result": "unsure", "reason": "Partly."}]},
    "generate_score": 0.65,
    "generate_reason": "The score is 0.65 because one statement answers the question directly.",
}


def _contexts(scorer_list: list[Any], items: int, results_for: Any) -> list[tuple[Any, StepContext]]:
    """(step, context) pairs in the flow's order, over fresh runs."""
    pairs = []
    for i in range(items):
        run = ScorerInput.model_validate(_row(i))
        for scorer in scorer_list:
            results = results_for(scorer, run)
            for step in scorer.steps:
                pairs.append((step, StepContext(
                    run=run,
                    results={k: v for k, v in results.items() if _earlier(k, step.name)},
                    score=results.get("generate_score") if step.name == "generate_reason" else None,
                )))
    return pairs


def _earlier(name: str, step: str) -> bool:
    return STEP_ORDER.index(name) < STEP_ORDER.index(step)


def _time(pairs: list[tuple[Any, StepContext]]) -> float:
    started = time.perf_counter()
    for step, ctx in pairs:
        step.cache_key(ctx)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"scorers from {os.path.dirname(scorers.__file__)}; python {sys.version.split()[0]}; "
          f"load average {os.getloadavg()}", flush=True)
    code = [create_tone_scorer(), create_textual_difference_scorer()]
    judge = [create_answer_relevancy_scorer(model="openai/fake-judge")]
    workloads = {
        "code (tone + textual difference)": (code, _code_results),
        "judge (answer relevancy)": (judge, lambda _scorer, _run: RELEVANCY_RESULTS),
    }
    for label, (scorer_list, results_for) in workloads.items():
        times, keys = [], 0
        for _ in range(args.repeat):
            pairs = _contexts(scorer_list, args.items, results_for)
            keys = len(pairs)
            times.append(_time(pairs))
        per_key = [t / keys * 1e6 for t in times]
        per_item_scorer = [t / (args.items * len(scorer_list)) * 1e3 for t in times]
        print(f"{label}: {keys} keys; per key median {statistics.median(per_key):.2f} us "
              f"(min {min(per_key):.2f}, max {max(per_key):.2f}); per item-scorer median "
              f"{statistics.median(per_item_scorer):.4f} ms", flush=True)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
