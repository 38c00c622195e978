"""Benchmarks of the eval flow (by hand; results in docs/benchmarks.md).

  (a) judge-bound: N items (default 200), answer relevancy, fake judge with 1 s latency, concurrency 16:
      3 requests per item; ideal = requests x latency / concurrency.
  (b) code-bound: tone + textual difference on 2,000 and on 200 items; marginal cost per item-scorer =
      (t2000 - t200) / (1800 x 2), storage included. `--set code` measures the four code scorers of
      SCORERS.md 2 instead ((t2000 - t200) / (1800 x 4)); `--set both` alternates the seeds and them in one
      run, on agent rows (an output that calls a tool, then answers), so the two figures compare.
  (c) a cached re-run of (a): zero judge requests expected; its wall time against (a).

Each run is one `run_evals` call timed on its own, after a warm-up run in the same process (so Prefect's
local server is already up). The fake judge runs in a child process. Private PREFECT_HOME, cache folder and DuckDB file in a temporary folder.

Usage: .venv/bin/python bench/bench_flow.py [a|b|c|all] [--items 200] [--latency 1.0] [--concurrency 16]
       [--repeat 3] [--set seeds|code|both] [--samples 3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import sys
import tempfile
import time
from itertools import pairwise
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

WORK = Path(tempfile.mkdtemp(prefix="evalduck-bench-flow-"))
os.environ.setdefault("PREFECT_HOME", str(Path(tempfile.gettempdir()) / "evalduck-bench-prefect-home"))
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
os.environ.setdefault("OPENAI_API_KEY", "sk-fake-bench")

from evalduck.flows import run_evals  # noqa: E402
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, default_responder  # noqa: E402


def _rows(n: int, tag: str) -> list[dict[str, str]]:
    return [
        {
            "id": f"{tag}-{i}",
            "input": f"How do I reset the password of account {i}?",
            "output": f"Open the sign-in page of account {i} and click Forgot password. We email you a link.",
            "groundTruth": f"Click Forgot password on the sign-in page for account {i} and follow the emailed link.",
        }
        for i in range(n)
    ]


def _agent_rows(n: int, tag: str) -> list[dict[str, Any]]:
    """(b)'s rows with the output as an agent's messages: a tool call, its result, then the answer."""
    rows: list[dict[str, Any]] = _rows(n, tag)
    for row in rows:
        call = {"id": f"call-{row['id']}", "type": "function",
                "function": {"name": "reset_password", "arguments": json.dumps({"account": row["id"]})}}
        row["output"] = [{"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "content": "link sent", "tool_call_id": call["id"]},
                         {"role": "assistant", "content": row["output"]}]
    return rows


SEEDS: list[object] = ["tone-scorer", "textual-difference-scorer"]
CODE: list[object] = ["completeness-scorer", "content-similarity-scorer", "keyword-coverage-scorer",
                      {"id": "code-tool-call-accuracy-scorer", "options": {"expected_tool": "reset_password"}}]


def _serve(latency: float, conn: Connection) -> None:
    """Child process: the fake judge, answering "count"/"reset"/"arrivals"/"stop" on the pipe."""
    arrivals: list[tuple[float, str]] = []  # (monotonic time, item tag) of each request, as it arrives

    def responder(req: dict[str, object]) -> object:
        match = re.search(r"account (\d+)", json.dumps(req.get("messages")))
        arrivals.append((time.monotonic(), match.group(1) if match else "?"))
        return default_responder(req)

    with FakeOpenAIServer(latency=latency, responder=responder) as server:
        conn.send(server.base_url)
        while True:
            command = conn.recv()
            if command == "count":
                conn.send(server.request_count)
            elif command == "reset":
                server.reset()
                arrivals.clear()
                conn.send(None)
            elif command == "arrivals":
                conn.send(list(arrivals))
            else:
                return


class _JudgeProcess:
    """The fake judge in its own process, as a real judge would be: its HTTP threads do not compete with
    the flow for this process's GIL."""

    def __init__(self, latency: float) -> None:
        self._conn, child = multiprocessing.Pipe()
        self._proc = multiprocessing.get_context("spawn").Process(target=_serve, args=(latency, child), daemon=True)
        self._proc.start()
        self.base_url: str = self._conn.recv()

    def ask(self, command: str) -> Any:
        self._conn.send(command)
        return self._conn.recv() or 0

    def step_overhead(self, latency: float) -> str:
        """Between one judge answer of an item and its next request: the flow's own time per step."""
        by_item: dict[str, list[float]] = {}
        for at, tag in self.ask("arrivals") or []:
            by_item.setdefault(tag, []).append(at)
        gaps = sorted(b - a - latency for times in by_item.values() for a, b in pairwise(times))
        if not gaps:
            return "no consecutive requests"

        def stats(values: list[float]) -> str:
            values = sorted(values)
            pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]  # noqa: E731
            return (f"mean {sum(values) / len(values) * 1000:.0f} ms, median {pick(0.5) * 1000:.0f} ms, "
                    f"p90 {pick(0.9) * 1000:.0f} ms, max {values[-1] * 1000:.0f} ms")

        by_position = [[t[k + 1] - t[k] - latency for t in by_item.values() if len(t) > k + 1] for k in range(2)]
        return (f"per-step overhead (next request - previous answer) over {len(gaps)} steps: {stats(gaps)}; "
                + "; ".join(f"after request {k + 1}: {stats(v)}" for k, v in enumerate(by_position) if v))

    def __enter__(self) -> "_JudgeProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send("stop")
        self._proc.join(timeout=10)


LAST_RUN: dict[str, float] = {}


def _timed(label: str, **kwargs: object) -> float:
    started = time.perf_counter()
    LAST_RUN["start"] = time.monotonic()
    result = run_evals(**kwargs)  # type: ignore[arg-type]
    LAST_RUN["end"] = time.monotonic()
    elapsed = time.perf_counter() - started
    counts = {k: (v["scored"], v["errored"]) for k, v in result.summary["scorers"].items()}
    print(f"{label}: {elapsed:.2f} s  (scored, errored) per scorer: {counts}", flush=True)
    return elapsed


def _warm_up(db: str, judge_spec: dict[str, object] | None = None) -> None:
    """Start Prefect's local server and import what the first judge call imports (litellm, openai)."""
    scorers: list[object] = ["tone-scorer"] + ([judge_spec] if judge_spec else [])
    run_evals(_rows(2, "warm"), scorers=scorers, db=db, cache_dir=str(WORK / "warm-cache"))


def bench_judge(items: int, latency: float, concurrency: int, cached_rerun: bool, samples: int = 1) -> None:
    db = str(WORK / "judge.duckdb")
    with _JudgeProcess(latency) as judge:
        spec = {"id": "answer-relevancy-scorer",
                "options": {"model": "openai/fake-judge", "api_base": judge.base_url, "timeout": 30}}
        _warm_up(db, spec)
        judge.ask("reset")
        kwargs = dict(data=_rows(items, "judge"), scorers=[spec], concurrency=concurrency, db=db,
                      cache_dir=str(WORK / "judge-cache"), name="bench-judge", judge_samples=samples)
        t = _timed(f"(a) judge-bound, {items} items, latency {latency}s, concurrency {concurrency}, "
                   f"judge samples {samples}", **kwargs)
        requests = judge.ask("count")
        ideal = requests * latency / concurrency
        print(f"    requests {requests} ({requests / items / samples:g} per item and sample); ideal {ideal:.2f} s; "
              f"ratio {t / ideal:.3f}x", flush=True)
        # At most `concurrency` items in flight, each making its requests one after another (a cell's samples
        # side by side): the items run in ceil(items / concurrency) rounds of (requests per item and sample x
        # latency), the last round part-filled.
        floor = -(-items // concurrency) * (requests / items / samples) * latency
        print(f"    with items in flight as the unit: floor {floor:.2f} s ({floor / ideal:.3f}x ideal); "
              f"run / floor {t / floor:.3f}x", flush=True)
        if samples == 1:  # the arrivals are told apart by item only: a cell's samples would interleave
            print(f"    {judge.step_overhead(latency)}", flush=True)
        arrivals = sorted(at for at, _ in judge.ask("arrivals") or [])
        if arrivals:
            print(f"    first request {arrivals[0] - LAST_RUN['start']:.2f} s after the call; the call returned "
                  f"{LAST_RUN['end'] - arrivals[-1] - latency:.2f} s after the last answer", flush=True)
        if os.environ.get("BENCH_ARRIVALS"):
            Path(os.environ["BENCH_ARRIVALS"]).write_text(json.dumps(judge.ask("arrivals")))
        if cached_rerun:
            judge.ask("reset")
            t2 = _timed("(c) cached re-run of (a)", **kwargs)
            print(f"    judge requests {judge.ask('count')}; {t2:.2f} s vs {t:.2f} s ({t2 / t:.1%} of (a))", flush=True)


def bench_code(repeat: int, which: str = "seeds") -> None:
    db = str(WORK / "code.duckdb")
    _warm_up(db)
    sets = {"seeds": SEEDS, "code": CODE} if which == "both" else {which: SEEDS if which == "seeds" else CODE}
    rows = _agent_rows if which == "both" else _rows
    times: dict[tuple[str, int], list[float]] = {(name, n): [] for name in sets for n in (200, 2000)}
    for r in range(repeat):
        for name, scorers in sets.items():  # alternated: each set sees the same load, round by round
            for n in (200, 2000):  # a fresh cache folder each time: every step computed
                times[name, n].append(_timed(
                    f"(b) code-bound, {n} items x {len(scorers)} scorers ({name})", data=rows(n, f"{name}{n}"),
                    scorers=scorers, db=db, cache_dir=str(WORK / f"code-cache-{name}-{n}-{r}")))
    for name, scorers in sets.items():
        t200, t2000 = statistics.median(times[name, 200]), statistics.median(times[name, 2000])
        marginal = (t2000 - t200) / (1800 * len(scorers)) * 1000
        print(f"    {name}, medians of {repeat}: t200 {t200:.2f} s, t2000 {t2000:.2f} s; marginal cost per "
              f"item-scorer: {marginal:.3f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", nargs="?", default="all", choices=["a", "b", "c", "all"])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3, help="(b): runs of each size; medians are used")
    parser.add_argument("--set", default="seeds", choices=["seeds", "code", "both"],
                        help="(b): the seeds (tone, textual difference), the four code scorers, or both alternated")
    parser.add_argument("--samples", type=int, default=1, help="(a), (c): judge_samples, each cell judged this often")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, load average {os.getloadavg()}, work folder {WORK}", flush=True)
    if args.which in ("b", "all"):
        bench_code(args.repeat, args.set)
    if args.which in ("a", "c", "all"):
        bench_judge(args.items, args.latency, args.concurrency, cached_rerun=args.which != "a", samples=args.samples)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
