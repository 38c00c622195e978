"""The HTML report from a results file built by two real runs of one name (two judge scorers against the fake
server, one of them lower-is-better, a code scorer, an item whose target fails): what it holds, the run's own report and its summary
artifact, direction from `run_scorers`, the CLI in a real subprocess, and the page in headless Chromium from
a file:// URL with the network off."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest
from flow_helpers import judge_scorer, rows
from markupsafe import escape

from evalduck.flows import run_evals
from evalduck.flows.report.html import write_report
from evalduck.flows.report.html.data import gather
from evalduck.flows.store import Store
from evalduck.flows.store.tdist import t_quantile_975
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

N = 6
CHANGED = "q-1"  # its output in run 2 is judged irrelevant, reads angry and is judged toxic ("hate")
FAILING = "What is the capital of country number 3?"  # run 2's target fails on this input
ANSWERS: dict[str, str] = {}
JUDGE = "openai/gpt-4o-mini"  # served by the fake judge; priced by litellm's local cost map


def target(question: str) -> str:
    if question == FAILING:
        raise RuntimeError("target down for this one")
    return ANSWERS[question]


class Built:
    def __init__(self, db: Path, first: Any, second: Any, judge_requests: int) -> None:
        self.db, self.first, self.second, self.judge_requests = db, first, second, judge_requests


@pytest.fixture(scope="module")
def built(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    folder = tmp_path_factory.mktemp("report")
    data = rows(N)
    os.environ["OPENAI_API_KEY"] = "sk-fake-key-for-tests"
    verdict = lambda statement: "no" if "Bananas" in statement else "yes"  # noqa: E731
    options: dict[str, Any] = {"name": "rep", "db": str(folder / "evals.duckdb"), "cache_dir": str(folder / "cache"),
                               "retries": 0, "concurrency": 4, "judge_process": False}
    with FakeOpenAIServer(verdict_for=verdict) as judge:
        relevancy = judge_scorer(judge, model=JUDGE)  # a model litellm prices: the header's cost
        scorers = [relevancy, "tone-scorer", {**relevancy, "id": "toxicity-scorer"}]  # toxicity: lower is better
        first = run_evals(data, scorers=scorers, report=False, **options)
        ANSWERS.update({r["input"]: r["output"] for r in data})
        ANSWERS[data[1]["input"]] = "Bananas are what I hate. Terrible, awful question."
        second = run_evals([{k: v for k, v in r.items() if k != "output"} for r in data], scorers=scorers,
                           target=f"{__name__}:target", **options)
        yield Built(folder / "evals.duckdb", first, second, judge.request_count)


def test_a_run_writes_its_report_beside_the_results_file_and_links_it(built: Built) -> None:
    assert built.first.report is None and not (built.db.parent / "reports" / f"rep-{built.first.run_id}.html").exists()
    path = built.db.parent / "reports" / f"rep-{built.second.run_id}.html"
    assert built.second.report == str(path) and path.is_file()
    html = path.read_text()
    assert built.second.run_id in html and built.first.run_id in html  # compared with the previous run

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        (summary,) = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["evalduck-rep-summary"]),
            flow_run_id=ArtifactFilterFlowRunId(any_=[built.second.flow_run_id])))
    # the path as text and the command that opens it: a browser will not follow a file:// link from the UI's page
    assert "file://" not in summary.description and f"`{path}`" in summary.description
    command = summary.description.split("or run `", 1)[1].split("`", 1)[0]
    assert command == f"evalduck --db {built.db} report {built.second.run_id} --open"
    opened = _open_in_recorder(command, built.db.parent)
    assert opened == path.as_uri()
    image = "![trend of each scorer's mean over the last runs](data:image/svg+xml;base64,"
    assert image in summary.description
    svg = base64.b64decode(summary.description.split(image, 1)[1].split(")", 1)[0]).decode()
    assert svg.startswith("<svg") and "toxicity-scorer" in svg


def test_the_report_holds_the_header_stats_trend_comparison_and_items(built: Built) -> None:
    store = Store(built.db)
    data = gather(store, "rep")
    run = store.run_record(built.second.run_id)
    h = data.header
    assert (h.run.run_id, h.run.dataset_hash, h.run.n_items) == (run.run_id, run.dataset_hash, N)
    assert h.judge_models == [JUDGE] and h.judge_tokens > 0 and h.duration_s is not None
    assert h.cost is not None and h.cost > 0
    assert h.target == f"{__name__}:target"

    stats = {s.stats.scorer_id: s.stats for s in data.scorers}
    judged = stats["answer-relevancy-scorer"]
    assert (judged.n_scored, judged.n_errors, judged.n_skipped) == (N - 1, 1, 0)
    scores = store.sql("SELECT score FROM scores WHERE run_id = ? AND scorer_id = 'tone-scorer' AND score IS NOT NULL",
                       [run.run_id]).rows
    values = [s for (s,) in scores]
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
    half = t_quantile_975(len(values) - 1) * sd / len(values) ** 0.5
    tone = stats["tone-scorer"]
    assert tone.mean_score == pytest.approx(mean)
    assert (tone.ci_low, tone.ci_high) == (pytest.approx(mean - half), pytest.approx(mean + half))

    assert [r.run_id for r in data.trend_runs] == [built.first.run_id, built.second.run_id]
    assert data.against is not None and data.against.run_id == built.first.run_id
    comparison = {c.row["scorer_id"]: c for c in data.comparison}
    assert comparison["tone-scorer"].row == store.compare(built.first.run_id, built.second.run_id)[1]
    (moved,) = comparison["answer-relevancy-scorer"].moved
    assert (moved.item_id, moved.moved, moved.score_a) == (CHANGED, "regressed", 1.0)
    assert moved.score_b is not None and moved.score_b < 1.0 and "Bananas" in str(moved.output_b)
    verdicts = [v["result"] for v in moved.steps_b["analyze"]["results"]]
    assert "no" in verdicts and moved.steps_b["preprocess"]["statements"] and moved.reason_b

    items = json.loads(data.items_json)
    assert data.scorer_ids == ["answer-relevancy-scorer", "tone-scorer", "toxicity-scorer"] and len(items) == N
    failed = next(i for i in items if i[1] == FAILING)
    assert [cell[0] for cell in failed[4]] == ["error"] * 3 and "target down" in failed[4][0][3]

    toxic = comparison["toxicity-scorer"]  # a real lower-is-better scorer: its rise on q-1 is the regression
    assert not toxic.higher_is_better and (toxic.row["n_improved"], toxic.row["n_regressed"]) == (0, 1)
    (moved,) = toxic.moved
    assert (moved.item_id, moved.moved) == (CHANGED, "regressed") and moved.delta > 0

    html = write_report(store, built.second.run_id, path=built.db.parent / "again.html").path.read_text()
    assert html.count("<svg") == 3  # histograms, trend, deltas
    trend = html[html.index('id="trend"'):html.index("<table", html.index('id="trend"'))]
    assert "toxicity-scorer (lower is better)" in trend and "tone-scorer (" not in trend  # its rise is the worse way
    assert '<td class="">higher is better</td>' in html and '<td class="dir-low">lower is better</td>' in html
    assert f"<code>{escape(run.dataset)}</code>, {N} rows, hash <code" in html and run.dataset_hash[:16] in html
    assert f"<dt>judge tokens</dt><dd>{h.judge_tokens:,}</dd>" in html and f"<dt>judge cost</dt><dd>${h.cost:.4f}</dd>" in html
    assert f"<dt>judge model</dt><dd><code>{JUDGE}</code></dd>" in html
    # compare_runs counts items by the scorer's direction, so the column says better / worse, not up / down
    assert "<th>better / worse / same</th>" in html
    toxic_row = html[html.index("<td><code>toxicity-scorer</code></td>", html.index('id="comparison"')):]
    assert toxic_row[:toxic_row.index("</tr>")].count('<td class="num">0 / 1 / 4</td>') == 1
    baseline_hash = store.run_record(built.first.run_id).dataset_hash
    assert baseline_hash != run.dataset_hash and baseline_hash not in html  # each run's own items: hashes differ
    assert f"dataset hash differs ({baseline_hash[:12]}… vs {run.dataset_hash[:12]}…)" in html


def test_direction_comes_from_run_scorers_when_the_file_has_it(built: Built, tmp_path: Path) -> None:
    copy = tmp_path / "evals.duckdb"
    shutil.copy(built.db, copy)
    with duckdb.connect(str(copy)) as con:  # schema v4's table (issue 13), filled at run start: made lower-is-better
        con.execute("DELETE FROM run_scorers WHERE run_id = ? AND scorer_id = 'answer-relevancy-scorer'",
                    [built.second.run_id])
        con.execute("INSERT INTO run_scorers VALUES (?, 'answer-relevancy-scorer', false)", [built.second.run_id])
    data = gather(Store(copy), built.second.run_id)
    directions = {s.stats.scorer_id: s.higher_is_better for s in data.scorers}
    assert directions == {"answer-relevancy-scorer": False, "tone-scorer": True, "toxicity-scorer": False}
    (moved,) = next(c for c in data.comparison if c.row["scorer_id"] == "answer-relevancy-scorer").moved
    assert moved.moved == "improved"  # its score fell, and lower is better
    assert '<td class="dir-low">lower is better</td>' in write_report(Store(copy), built.second.run_id).path.read_text()


def _open_in_recorder(command: str, cwd: Path) -> str:
    """Run ``command`` in a shell as a user pastes it, with BROWSER a script that records the URL it is given
    (Python's webbrowser runs ``$BROWSER URL``); the URL."""
    record = cwd / "opened.txt"
    record.unlink(missing_ok=True)
    browser = cwd / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {record}\n')
    browser.chmod(0o755)
    env = {**os.environ, "BROWSER": str(browser), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PREFECT_API_URL": ""}
    done = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return record.read_text()


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    evalduck = Path(sys.executable).with_name("evalduck")
    return subprocess.run([str(evalduck), "--db", str(db), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PREFECT_API_URL": "", "PREFECT_UI_URL": "http://ui.invalid"})


def test_cli_report_and_show_in_a_real_process(built: Built, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    done = _cli(built.db, "report", "rep", "--against", built.first.run_id, "--last", "5", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert f"report of run {built.second.run_id}: {out}" in done.stdout
    assert f'href="http://ui.invalid/runs/flow-run/{built.second.flow_run_id}"' in out.read_text()
    opened = _open_in_recorder(f"evalduck --db {built.db} report rep -o {tmp_path / 'o.html'} --open", tmp_path)
    assert opened == (tmp_path / "o.html").as_uri()
    missing = _cli(built.db, "report", "nope")
    assert missing.returncode == 2 and "no run with id or name 'nope'" in missing.stderr
    shown = _cli(built.db, "show", "rep", "--worst", "0")
    assert shown.returncode == 0, shown.stderr
    assert "Trend: mean over the last 2 runs of rep" in shown.stdout
    line = next(x for x in shown.stdout.splitlines() if "answer-relevancy-scorer" in x and "1.000" in x and "▁" in x)
    assert "█▁" in line  # the judged mean fell
    assert any("toxicity-scorer (lower is better)" in x and "▁█" in x for x in shown.stdout.splitlines())


def test_a_run_on_a_server_that_ends_with_it_links_no_flow_run_page() -> None:
    """`evalduck run --ephemeral` (and CI) records to a temporary server without a UI, gone once the run ends:
    its report showed a link to that server's flow run page."""
    from evalduck.flows.cli.run import api_settings
    from evalduck.flows.run.finish import _ui_url

    with api_settings("http://127.0.0.1:9/api", lasting=False):
        assert _ui_url() is None
    with api_settings("http://127.0.0.1:9/api", lasting=True):  # the folder's server, or PREFECT_API_URL's
        assert _ui_url() == "http://127.0.0.1:9"


CHROMIUM = Path(os.environ.get("EVALDUCK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium() -> None:
    if not CHROMIUM.exists():
        if os.environ.get("EVALDUCK_REQUIRE_BROWSER") == "1":
            pytest.fail(f"EVALDUCK_REQUIRE_BROWSER=1 but no Chromium at {CHROMIUM}")
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")


@contextmanager
def _page(tmp_path: Path, problems: list[str], requests: list[str] | None = None) -> Iterator[Any]:
    """A page of headless Chromium, offline, 1300 x 900, that notes console errors and warnings, page errors
    and (given ``requests``) every URL requested."""
    _chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1300, "height": 900}, offline=True)
        try:
            page = context.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            if requests is not None:
                page.on("request", lambda r: requests.append(r.url))
            yield page
        finally:
            context.close()


def test_the_page_in_chromium_offline(built: Built, tmp_path: Path) -> None:
    """No console error, no request but the file itself, every chart drawn, the item table sorts and filters by
    clicks, an item's step results one click away; the screenshot is kept at the path printed."""
    from playwright.sync_api import expect

    page_url = Path(built.second.report).as_uri()
    problems: list[str] = []
    requests: list[str] = []
    with _page(tmp_path, problems, requests) as page:
        page.goto(page_url)
        charts = page.locator("figure.chart svg")
        expect(charts).to_have_count(3)
        for k in range(3):
            box = charts.nth(k).bounding_box()
            assert box is not None and box["width"] > 50 and box["height"] > 50, (k, box)

        count = page.locator("#count")
        expect(count).to_have_text(f"{N} items")
        tone = page.locator("#thead button", has_text="tone-scorer")

        def column(k: int) -> list[str]:
            return page.locator("#rows .trow").evaluate_all(f"rows => rows.map(r => r.children[{k}].textContent)")

        tone.click()
        expect(tone).to_have_attribute("aria-sort", "ascending")
        ascending = [float(v) for v in column(4) if v != "error"]
        assert ascending == sorted(ascending) and len(ascending) == N - 1 and column(4)[-1] == "error"
        tone.click()
        expect(tone).to_have_attribute("aria-sort", "descending")
        descending = [float(v) for v in column(4) if v != "error"]
        assert descending == sorted(ascending, reverse=True)

        page.select_option("#status", "error")
        expect(count).to_have_text(f"1 of {N} items")
        assert column(1) == [FAILING]
        page.select_option("#status", "")
        page.fill("#search", "bananas")
        expect(count).to_have_text(f"1 of {N} items")
        assert column(0) == [CHANGED]
        page.locator("#rows .trow").first.click()
        dialog = page.locator("dialog#detail")
        expect(dialog).to_be_visible()
        expect(dialog.locator("table.steps").first).to_contain_text("no")
        page.keyboard.press("Escape")

        # the most-moved items: input, both outputs, both scores, the reason and each judge scorer's
        # statements with their verdicts as a table (answer relevancy's results, toxicity's verdicts)
        relevancy = page.locator('details.moved-item[data-scorer="answer-relevancy-scorer"]')
        relevancy.locator("summary").click()
        sides = relevancy.locator(".sides > div")
        expect(sides.nth(0)).to_contain_text("The capital of country 1 is City1.")
        expect(sides.nth(1)).to_contain_text("Bananas are what I hate.")
        expect(sides.nth(0).locator("h5")).to_have_text("baseline score 1.000")
        expect(sides.nth(1)).to_contain_text("reason: ")
        expect(sides.nth(1).locator("table.steps tr", has_text="Bananas are what I hate.")).to_contain_text("no")
        expect(sides.nth(1).locator("table.steps th")).to_have_text(["statement", "result", "reason"])
        toxic = page.locator('details.moved-item[data-scorer="toxicity-scorer"]')
        toxic.locator("summary").click()
        expect(toxic.locator("summary")).to_contain_text("regressed")
        verdicts = toxic.locator(".sides > div").nth(1).locator("table.steps")
        expect(verdicts.locator("th")).to_have_text(["verdict", "reason"])
        expect(verdicts.locator("tbody tr").first).to_contain_text("yes")
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")
    assert not problems, problems
    assert requests == [page_url], requests


def test_user_strings_stay_text_in_the_page(tmp_path: Path) -> None:
    """A name, an id, an input or a reason holding markup cannot add an element or end the data's <script>."""
    store = Store(tmp_path / "evals.duckdb")
    evil = "</script><script>alert(1)</script><b>x</b>"
    for k in range(2):
        run_id = f"run-{k}"
        store.start_run(run_id, evil, "d.jsonl", "h", {"target": evil})
        store.write_batch(run_id, items=[{"item_id": f"{evil}{i}", "input": evil, "output": evil} for i in range(3)],
                          scores=[{"item_id": f"{evil}{i}", "scorer_id": "tone-scorer", "scorer_version": "1",
                                   "score": 0.1 * i + 0.3 * k, "reason": evil} for i in range(3)], status="completed")
    html = write_report(store, "run-1", path=tmp_path / "r.html").path.read_text()
    assert "<script>alert(1)" not in html and "<b>x</b>" not in html
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the header, as text
    assert html.count("<script") == 3 and html.count("</script>") == 3  # the data, the item data, the code


def test_the_page_writes_control_and_bidi_characters_as_escapes(tmp_path: Path) -> None:
    r"""The CLI's rule (flows/report/text.py) for what the template writes: a run name, dataset, target and skip
    reason holding U+202E or an ANSI escape show them as `\u202e` and `\x1b`; outside the page's data (read by
    its script, which applies the same rule: the Chromium test above) no such character is left."""
    import re

    store = Store(tmp_path / "evals.duckdb")
    odd = f"{RTL_ID} \x1b[31mred"
    store.start_run("run-0", odd, f"{odd}.jsonl", "h", {"target": odd})
    store.write_batch("run-0", items=[{"item_id": odd, "input": odd, "output": odd}],
                      scores=[{"item_id": odd, "scorer_id": "tone-scorer", "scorer_version": "1", "status": "skipped",
                               "reason": odd}], status="completed")
    html = write_report(store, "run-0", path=tmp_path / "r.html").path.read_text()
    page = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert "\u202e" not in page and "\x1b" not in page
    assert page.count("rtl\\u202egnp.exe \\x1b[31mred") >= 5  # title, heading, dataset, target, skip reason


def test_a_trend_run_without_scores_reads_none_scored(tmp_path: Path) -> None:
    """A scorer skipped throughout a run of the trend has no mean there: the table says so, not "– –"."""
    store = Store(tmp_path / "evals.duckdb")
    for k in range(2):
        store.start_run(f"run-{k}", "n", "d.jsonl", "h", {})
        store.write_batch(f"run-{k}", items=[{"item_id": "a", "input": "i", "output": "o"}],
                          scores=[{"item_id": "a", "scorer_id": "j-scorer", "scorer_version": "1",
                                   **({"status": "skipped", "reason": "no judge"} if k == 0 else {"score": 0.5})}],
                          status="completed")
    html = write_report(store, "run-1", path=tmp_path / "r.html").path.read_text()
    trend = html[html.index('id="trend"'):html.index('id="comparison"')]
    assert '<span class="muted">none scored</span>' in trend and "– –" not in trend
    assert "One run only" not in trend and "fewer than two of these runs have a scored cell" in trend
    first = write_report(store, "run-0", path=tmp_path / "r0.html").path.read_text()
    scorers = first[first.index('id="scorers"'):first.index('id="trend"')]  # why, as `evalduck show` says
    assert '<td><code>j-scorer</code></td><td class="num">1</td><td>no judge</td>' in scorers


def test_sparkline() -> None:
    from evalduck.flows.report.html import sparkline

    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"
    assert sparkline([0.7, None, 0.7]) == "▄ ▄"  # a constant series sits in the middle; no mean, a gap
    assert sparkline([None, None]) == "  "


SIX = ("answer-similarity-scorer", "completeness-scorer", "content-similarity-scorer", "keyword-coverage-scorer",
       "textual-difference-scorer", "tone-scorer")
RTL_ID = "rtl\u202egnp.exe"  # shows as "rtlexe.png" where U+202E acts


@pytest.fixture(scope="module")
def six(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of "six" with six scorers, written by the store as a run writes them: answer similarity's step
    results from the real scorer against the fake judge (one output unit per match: its outputUnits list is as
    long as its matches), keyword coverage skipped on every item (as a judge scorer with no model is), answer
    similarity skipped on one; an item id with a right-to-left override. The report by the CLI."""
    from evalduck.scorers import PREBUILT, create_answer_similarity_scorer

    folder = tmp_path_factory.mktemp("six")
    store = Store(folder / "evals.duckdb")
    ids = [RTL_ID, *(f"q-{i}" for i in range(1, 8))]
    os.environ["OPENAI_API_KEY"] = "sk-fake-key-for-tests"
    with FakeOpenAIServer() as judge:
        similar = create_answer_similarity_scorer(model="openai/fake-judge", api_base=judge.base_url)
        judged = similar.run(input="When does the store open?", output="The store opens at 9am.",
                             ground_truth="It opens at 9am.")
    for k, run_id in enumerate(("0b7f4c2e-1d3a-4e5f-9a8b-7c6d5e4f3a21", "f3a2b1c0-9d8e-4f7a-8b6c-5d4e3f2a1b09")):
        store.start_run(run_id, "six", "six.jsonl", "h1", {}, directions={s: PREBUILT[s].higher_is_better for s in SIX},
                        items=[{"item_id": i, "input": f"question {i}", "output": "The store opens at 9am.",
                                "ground_truth": "It opens at 9am."} for i in ids])
        cells = []
        for n, item in enumerate(ids):
            for sid in SIX:
                cell: dict[str, Any] = {"item_id": item, "scorer_id": sid, "scorer_version": "1"}
                if sid == "keyword-coverage-scorer" or (sid == "answer-similarity-scorer" and item == "q-3"):
                    cell |= {"status": "skipped", "reason": f"{sid} skipped: no judge model"}
                elif sid == "answer-similarity-scorer":
                    cell |= {"score": judged.score, "preprocess_step_result": judged.preprocess_step_result,
                             "analyze_step_result": judged.analyze_step_result, "reason": "partly the same facts"}
                else:
                    cell |= {"score": round(0.1 * n + 0.05 * k, 3)}
                cells.append(cell)
        store.write_batch(run_id, scores=cells, status="completed")
    page = folder / "six.html"
    done = _cli(folder / "evals.duckdb", "report", "six", "-o", str(page))
    assert done.returncode == 0, done.stderr
    return page


def test_the_report_reads_right_in_chromium(six: Path, tmp_path: Path) -> None:
    """Issue 23: the status filter names its scorer (skipped on any scorer was every item: keyword coverage is
    skipped throughout); the trend table's run id stays on one or two lines with six scorers; answer similarity's
    detail has no two columns of one name; an id's right-to-left override is written, not obeyed; each scorer's
    line says what it measures and which way is better."""
    from playwright.sync_api import expect

    problems: list[str] = []
    with _page(tmp_path, problems) as page:
        page.goto(six.as_uri())
        count = page.locator("#count")
        expect(count).to_have_text("8 items")

        def ids() -> list[str]:
            return page.locator("#rows .trow").evaluate_all("rows => rows.map(r => r.children[0].textContent)")

        page.select_option("#status", "skipped")
        expect(count).to_have_text("8 items")  # any scorer: keyword coverage is skipped on each item
        page.select_option("#status-scorer", label="answer-similarity-scorer")
        expect(count).to_have_text("1 of 8 items")
        assert ids() == ["q-3"]
        page.select_option("#status-scorer", label="tone-scorer")
        expect(count).to_have_text("0 of 8 items")
        page.select_option("#status", "scored")
        expect(count).to_have_text("8 items")
        page.select_option("#status-scorer", label="answer-similarity-scorer")
        expect(count).to_have_text("7 of 8 items")
        assert "q-3" not in ids()

        # the right-to-left override is shown as its escape, in the row and in the dialog's title
        page.select_option("#status", "")
        rtl = page.locator("#rows .trow").filter(has_text="rtl")
        expect(rtl).to_have_count(1)
        assert rtl.locator("div").first.text_content() == "rtl\\u202egnp.exe"
        rtl.click()
        dialog = page.locator("dialog#detail")
        expect(dialog).to_be_visible()
        expect(dialog.locator("h3")).to_have_text("item rtl\\u202egnp.exe")
        headers = dialog.locator("table.steps").first.locator("th").all_text_contents()
        assert headers and len(headers) == len(set(headers)), headers
        assert "outputUnit" in headers and "groundTruthUnit" in headers
        page.keyboard.press("Escape")

        # the trend table: every run id cell at most two lines high
        cells = page.locator("#trend td.run-id")
        expect(cells).to_have_count(2)
        line = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#trend td.run-id code')).lineHeight) || 0")
        for k in range(2):
            box = cells.nth(k).locator("code").bounding_box()
            assert box is not None and box["height"] <= 2 * max(line, 14) + 1, (box, line)

        # the item table's column headers: each scorer id whole (they were cut to `context-pr…`), wrapped if need be
        heads = page.locator("#thead button")
        assert heads.all_text_contents()[3:] == list(SIX)
        assert heads.evaluate_all("bs => bs.every(b => b.scrollWidth <= b.clientWidth + 1)")

        measures = page.locator("dl.measures")
        expect(measures).to_contain_text("tone, not quality; higher is better")
        expect(measures.locator("dt")).to_have_text(list(SIX))
    assert not problems, problems
