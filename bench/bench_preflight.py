"""Benchmark of the preflight (`evalduck run --dry-run`, issue 28): 10,000 items x 3 judge scorers (answer
relevancy, bias, toxicity), three requests per cell each, so 90,000 requests to find and count. Issue 28's bar:
under 5 s.

  fresh: an empty step cache and no results file: every first step's prompt built and its key looked up (a
      miss), the later steps estimated.
  cached: every judge step of every cell in the step cache (records written here, as Prefect writes them, with
      the fake judge's answers computed in this process): every step's key computed and its record read, every
      prompt built (and nothing to send).

Each is timed as `preflight()` in this process after litellm's import (what the preflight itself costs) and as
the whole `evalduck run --dry-run --format json` command in a fresh process (imports and all).

Usage: .venv/bin/python bench/bench_preflight.py [--items 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_API_KEY", "sk-fake-bench")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
SCORERS = ("answer-relevancy-scorer", "bias-scorer", "toxicity-scorer")
MODEL = "openai/gpt-4o-mini"
CLI = str(Path(sys.executable).with_name("evalduck"))


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "input": f"Is shop number {i} open on Sunday, and until when?",
             "output": f"Shop {i} opens at ten on Sundays. It closes at six. The staff are friendly."} for i in range(n)]


class _LocalJudge:
    """A judge transport answering as the fake judge does, in this process (no HTTP): to fill the cache."""

    async def request(self, settings: Any, messages: list[dict[str, str]], response_format: Any, label: str,
                      repair: bool) -> tuple[str, Any]:
        from evalduck.scorers import JudgeUsage
        from evalduck.scorers.testing.fake_openai import default_responder

        answer = default_responder({"messages": messages, "response_format": response_format})
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return text, JudgeUsage(model=settings.model, prompt_tokens=1, completion_tokens=1, latency_s=0.0)


def _fill(cache: Path, rows: list[dict[str, Any]]) -> None:
    """Every judge step of every cell in the cache, one record per key in Prefect's format."""
    from evalduck.flows.inputs.datasets import dataset_from_rows
    from evalduck.flows.inputs.registry import build_scorers
    from evalduck.flows.run.preflight_walk import scorer_input
    from evalduck.scorers import PipelineState

    cache.mkdir(parents=True, exist_ok=True)
    built, _ = build_scorers(list(SCORERS), judge_model=MODEL, judge_api_base=None, judge_timeout=None)
    items = dataset_from_rows(rows).items
    judge = _LocalJudge()

    async def fill() -> None:
        for scorer in (s.with_source() for s in built):
            for item in items:
                state = PipelineState(scorer, scorer_input(item, item.output))
                for step in scorer.steps:
                    ctx = state.context(step)
                    out = await step.arun(ctx, transport=judge)  # type: ignore[arg-type]
                    if step.is_judge:
                        _record(cache, step.cache_key(ctx), out.model_dump(mode="json"))
                    state.record(step, out)

    asyncio.run(fill())


def _record(cache: Path, key: str, result: Any) -> None:
    path = cache / key
    meta = {"storage_key": str(path), "expiration": None, "serializer": {"type": "json", "jsonlib": "json"},
            "prefect_version": "3.9.1", "storage_block_id": None}
    path.write_text(json.dumps({"metadata": meta, "result": json.dumps(result)}))


def _in_process(data: Path, cache: Path, db: Path, repeat: int) -> list[float]:
    from evalduck.flows.config import RunOptions
    from evalduck.flows.run.preflight import preflight
    from evalduck.flows.run.preflight_cost import TokenCounter

    TokenCounter(MODEL)  # litellm imported before the clock starts
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        found = preflight(data=str(data), scorers=list(SCORERS), target=None,
                          options=RunOptions(judge_model=MODEL, cache_dir=str(cache), db=str(db)))
        times.append(time.perf_counter() - started)
    print(f"  {found.requests:,} requests, {found.cached:,} cached, cost ${found.cost_low:.2f}-${found.cost_high:.2f}")
    return times


def _command(folder: Path, cache: Path, repeat: int) -> list[float]:
    args = [CLI, "--db", "none.duckdb", "run", "data.jsonl", *[a for s in SCORERS for a in ("-s", s)],
            "--judge-model", MODEL, "--cache-dir", str(cache), "--dry-run", "--format", "json"]
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(args, cwd=folder, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - started)
        if done.returncode:
            raise SystemExit(done.stderr)
    return times


def _show(name: str, times: list[float]) -> None:
    print(f"  {name}: median {statistics.median(times):.2f} s ({min(times):.2f}-{max(times):.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="evalduck-bench-preflight-"))
    rows = _rows(args.items)
    data = folder / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    empty, full = folder / "empty-cache", folder / "cache"
    started = time.perf_counter()
    _fill(full, rows)
    print(f"{args.items:,} items x {len(SCORERS)} judge scorers; cache filled in {time.perf_counter() - started:.1f} s")
    for name, cache in (("fresh", empty), ("cached", full)):
        print(f"{name}:")
        _show("preflight() in this process", _in_process(data, cache, folder / "none.duckdb", args.repeat))
        _show("the whole command", _command(folder, cache, args.repeat))


if __name__ == "__main__":
    main()
