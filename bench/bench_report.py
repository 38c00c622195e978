"""Benchmark of the HTML report: size and time to write it for a run of 10,000 items x 3 scorers compared with a
previous run of the same name (answer-relevancy-like step results: statements and verdicts on every item).

    .venv/bin/python bench/bench_report.py [--items 10000] [--runs 3] [--repeat 3] [--browser]

With --browser the report is then opened in headless Chromium (Playwright, offline, from its file:// URL; the
browser at $EVALDUCK_CHROMIUM or /usr/bin/chromium), --repeat times in a fresh page: the time from navigation
to the item table's first rows, then in the page (performance.now() around each action, its script work
included, not the paint) a click on each scorer's column to sort, the status filter, the text search, and the
rows in the DOM after a scroll to the middle.

Each write happens in a fresh process (`python -c`), as `evalduck report` and a run's end do, so the figures
include the chart renderer's start in that process; the same process then writes it again (renderer warm).
Prints a Markdown block for docs/benchmarks.md (machine, load, command, figures).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from evalduck.flows.store import Store

SCORERS = ("answer-relevancy-scorer", "tone-scorer", "textual-difference-scorer")
T0 = datetime(2026, 12, 1, tzinfo=timezone.utc)

_WRITE = """
import json, sys, time
from pathlib import Path
from evalduck.flows.store import Store
from evalduck.flows.report.html import write_report
store = Store(sys.argv[1])
figures = []
for k in range(2):
    start = time.perf_counter()
    written = write_report(store, "bench", path=Path(sys.argv[2]))
    figures.append({"seconds": time.perf_counter() - start, "bytes": written.bytes})
print(json.dumps(figures))
"""


def _fill(store: Store, run_id: str, items: int, minutes: int, rng: random.Random) -> None:
    rows, cells = [], []
    for i in range(items):
        question = f"What is the capital of country number {i}? Answer in one sentence, with its river."
        answer = f"The capital of country {i} is City{i}. It lies on the river R{i % 97}. It has a famous museum."
        rows.append({"item_id": f"q-{i:05d}", "input": question, "output": answer, "ground_truth": f"City{i}."})
        statements = [s.strip() + "." for s in answer.split(".") if s.strip()]
        verdicts = [{"result": rng.choice(("yes", "yes", "unsure", "no")), "reason": "It answers the question asked."}
                    for _ in statements]
        score = round(sum({"yes": 1, "unsure": 0.3, "no": 0}[v["result"]] for v in verdicts) / len(verdicts), 2)
        cells.append({"item_id": rows[-1]["item_id"], "scorer_id": SCORERS[0], "scorer_version": "1", "score": score,
                      "reason": f"The score is {score} because most statements answer the question.",
                      "preprocess_step_result": {"statements": statements}, "analyze_step_result": {"results": verdicts},
                      "judge_model": "openai/fake-judge", "prompt_tokens": 300, "completion_tokens": 60})
        for scorer in SCORERS[1:]:
            if rng.random() < 0.01:
                cells.append({"item_id": rows[-1]["item_id"], "scorer_id": scorer, "scorer_version": "1",
                              "status": "error", "score": None, "error": "RuntimeError: target down"})
            else:
                cells.append({"item_id": rows[-1]["item_id"], "scorer_id": scorer, "scorer_version": "1",
                              "score": round(rng.random(), 3), "analyze_step_result": {"compound": rng.random()}})
    store.start_run(run_id, "bench", "bench.jsonl", "h1", {"target": "output"}, started_at=T0 + timedelta(minutes=minutes))
    store.write_batch(run_id, items=rows, scores=cells, status="completed")


_ACTIONS = """async () => {
  const time = (act) => { const t0 = performance.now(); act(); return performance.now() - t0; };
  const head = [...document.querySelectorAll("#thead button")].slice(3);
  const sorts = head.map((b) => time(() => b.click()));
  const status = document.getElementById("status"), search = document.getElementById("search");
  const filter = time(() => { status.value = "error"; status.dispatchEvent(new Event("change")); });
  const filtered = document.getElementById("count").textContent;
  status.value = ""; status.dispatchEvent(new Event("change"));
  // the search box waits 120 ms for typing to pause; the filter itself is what is timed here
  search.value = "q-0999";
  const done = new Promise((r) => new MutationObserver((_, o) => { o.disconnect(); r(performance.now()); })
    .observe(document.getElementById("count"), { childList: true, characterData: true, subtree: true }));
  const typed = performance.now();
  search.dispatchEvent(new Event("input"));
  const searched = (await done) - typed - 120;
  search.value = ""; status.dispatchEvent(new Event("change"));
  const viewport = document.getElementById("viewport");
  viewport.scrollTop = viewport.scrollHeight / 2;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return { sorts, filter, filtered, searched, rows: document.querySelectorAll("#rows .trow").length,
           first: document.querySelector("#rows .trow").dataset.item };
}"""


def _browser(report: Path, repeat: int) -> list[dict[str, object]]:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("EVALDUCK_CHROMIUM", "/usr/bin/chromium")
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    figures = []
    with sync_playwright() as playwright, tempfile.TemporaryDirectory(prefix="bench-report-profile-") as profile:
        context = playwright.chromium.launch_persistent_context(profile, executable_path=chromium, headless=True,
                                                                args=args, viewport={"width": 1300, "height": 900},
                                                                offline=True)
        try:
            for _ in range(repeat):
                page = context.new_page()
                start = time.perf_counter()
                page.goto(report.as_uri())
                page.wait_for_selector("#rows .trow")
                loaded = time.perf_counter() - start
                figures.append({"load": loaded, **page.evaluate(_ACTIONS)})
                page.close()
        finally:
            context.close()
    return figures


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ms (min {min(values):.0f}, max {max(values):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="runs of the name (the trend)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes that write the report")
    parser.add_argument("--browser", action="store_true", help="then open it in headless Chromium (see above)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-report-"))
    store = Store(folder / "evals.duckdb")
    rng = random.Random(7)
    start = time.perf_counter()
    for k in range(args.runs):
        _fill(store, f"run-{k}", args.items, k, rng)
    fill_s = time.perf_counter() - start
    cold, warm, size = [], [], 0
    for _ in range(args.repeat):
        out = subprocess.run([sys.executable, "-c", _WRITE, str(store.path), str(folder / "report.html")],
                             capture_output=True, text=True, check=True)
        first, second = json.loads(out.stdout.strip().splitlines()[-1])
        cold.append(first["seconds"])
        warm.append(second["seconds"])
        size = first["bytes"]
    load = os.getloadavg()
    print(f"## HTML report (`bench/bench_report.py`, {datetime.now():%Y-%m-%d})\n")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.\n")
    browser = _browser(folder / "report.html", args.repeat) if args.browser else []
    print(f"Command: `.venv/bin/python bench/bench_report.py --items {args.items} --runs {args.runs} --repeat {args.repeat}"
          f"{' --browser' if args.browser else ''}`"
          f" (setup: {args.runs} runs of {args.items:,} items x {len(SCORERS)} scorers in {fill_s:.1f} s)\n")
    print("| what | figure |\n| --- | --- |")
    print(f"| report size | {size / 1e6:.2f} MB ({size:,} bytes) |")
    print(f"| write in a fresh process (median of {args.repeat}; renderer start included) | {statistics.median(cold):.2f} s "
          f"(min {min(cold):.2f}, max {max(cold):.2f}) |")
    print(f"| write again in that process (renderer warm) | {statistics.median(warm):.2f} s "
          f"(min {min(warm):.2f}, max {max(warm):.2f}) |")
    if browser:
        print(f"| in Chromium: navigation to the item table's first rows (median of {len(browser)} fresh pages) | "
              f"{_ms([b['load'] * 1000 for b in browser])} |")
        print(f"| a click on a scorer's column: sort {args.items:,} items and draw (each of {len(SCORERS)} columns, every page) | "
              f"{_ms([t for b in browser for t in b['sorts']])} |")
        print(f"| status filter `error` ({browser[0]['filtered']}) | {_ms([b['filter'] for b in browser])} |")
        print(f"| text search, past its 120 ms typing pause | {_ms([b['searched'] for b in browser])} |")
        print(f"| rows in the DOM after a scroll to the middle (first: {browser[0]['first']}) | "
              f"{', '.join(str(b['rows']) for b in browser)} |")


if __name__ == "__main__":
    main()
