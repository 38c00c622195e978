"""The sweep's HTML report (flows/report/sweep_html/): a stored sweep (tests/flows/sweep_builder.py) written as a
page, parsed back and checked against the leaderboard's own figures (sweep_rows), its charts, its escaping, its
Pareto front and marginal effects by hand, its links to the run reports; and `evalduck leaderboard --format html`
in a real process, its page opening offline."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import sweep_builder as sb

from evalduck.flows.report.leaderboard import Row
from evalduck.flows.report.sweep_board import sweep_rows
from evalduck.flows.report.sweep_html import default_sweep_report_path, write_sweep_report
from evalduck.flows.report.sweep_html.analysis import Point, marginal_effects, pareto_front
from evalduck.flows.store import Store

CLI = str(Path(sys.executable).with_name("evalduck"))
_VOID = {"meta", "br", "img", "input", "link", "hr"}


class Page(HTMLParser):
    """Every element of a page with its attributes, its text (its descendants' too) and its open ancestors."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[dict[str, Any]] = []
        self.elements: list[dict[str, Any]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = {"tag": tag, "attrs": dict(attrs), "parts": [], "parents": list(self.stack)}
        self.elements.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        for element in self.stack:
            element["parts"].append(data)

    def find(self, tag: str, cls: str | None = None, within: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return [e for e in self.elements if e["tag"] == tag
                and (cls is None or cls in (e["attrs"].get("class") or "").split())
                and (within is None or any(p is within for p in e["parents"]))]


def text(element: dict[str, Any]) -> str:
    return " ".join("".join(element["parts"]).split())


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path, Page]:
    folder = tmp_path_factory.mktemp("sweep")
    store = sb.build(folder / "evals.duckdb", repeats=2)
    report = write_sweep_report(store, sb.SWEEP_ID)
    assert report.path == default_sweep_report_path(store, sb.NAME, sb.SWEEP_ID)
    assert report.path == folder / "reports" / "sweep-tone-sweep-5eed0001.html"
    return store, report.path, Page(report.path.read_text(encoding="utf-8"))


def _rows(store: Store) -> list[Row]:
    return sweep_rows(store, sb.SWEEP_ID, sb.BASELINE)


def _interval(low: float | None, high: float | None, signed: bool = False) -> str:
    f = "{:+.3f}" if signed else "{:.3f}"
    return f"[{f.format(low)}, {f.format(high)}]"


def test_the_leaderboard_shows_every_candidate_and_scorer_with_sweep_rows_figures(written: Any) -> None:
    store, _, page = written
    rows = _rows(store)
    assert {r.scorer for r in rows} == {"tone", "halluc"} and len({r.candidate for r in rows}) == 4
    assert any(r.delta and not r.delta.distinguishable for r in rows)
    assert any(r.delta and r.delta.distinguishable for r in rows)
    for scorer in ("halluc", "tone"):
        (table,) = [t for t in page.find("table", "board") if t["attrs"]["data-scorer"] == scorer]
        shown = page.find("tr", within=table)[1:]  # after the header row
        expected = [r for r in rows if r.scorer == scorer]
        assert [tr["attrs"]["data-candidate"] for tr in shown] == [r.candidate for r in expected]  # best first
        for tr, row in zip(shown, expected, strict=True):
            cell = {c: text(td) for td in page.find("td", within=tr) for c in td["attrs"]["class"].split()}
            assert cell["candidate"] == row.candidate + (" baseline" if row.baseline else "")
            assert cell["best"] == ("best" if row.best else "")
            assert cell["n"] == str(row.n)
            assert cell["mean"] == f"{row.mean:.3f} {_interval(row.low, row.high)}"
            assert cell["tokens"] == f"{row.judge_tokens:,}" and cell["cost"] == f"${row.cost:.4f}"
            d = row.delta
            if d is None:
                assert row.baseline and cell["delta"] == "baseline" and cell["wtl"] == "–"
                continue
            verdict = "not distinguishable" if not d.distinguishable else "better" if d.delta > 0 else "worse"
            assert cell["delta"] == f"{d.delta:+.3f} {_interval(d.low, d.high, True)}{verdict}"
            assert cell["wtl"] == f"{d.wins} / {d.ties} / {d.losses}"
            assert cell["p-holm"] == f"{d.p_holm:.3g}"
            assert cell["per-point"] == ("–" if row.cost_per_point is None else f"${row.cost_per_point:.4f}")
            assert ("nd" in tr["attrs"]["class"].split()) == (not d.distinguishable)


def test_the_header_names_the_sweep_and_its_baseline(written: Any) -> None:
    _, _, page = written
    facts = {text(dt): text(dd) for div in page.find("div", within=page.find("dl", "facts")[0])
             for dt in page.find("dt", within=div) for dd in page.find("dd", within=div)}
    assert facts["status"] == "completed" and facts["baseline"] == sb.BASELINE
    assert facts["dataset"] == f"d.jsonl ({len(sb.ITEMS)} items, hash {'ab' * 6})"
    assert facts["candidates"] == "4, 8 run(s)" and facts["Prefect flow run"] == "–"
    assert text(page.find("h1")[0]) == f"{sb.NAME} sweep {sb.SWEEP_ID}"


def test_heatmap_and_scatter_are_svg_and_the_heatmap_hatches_what_is_not_distinguishable(written: Any) -> None:
    store, path, page = written
    for chart in ("heatmap", "scatter"):
        (figure,) = [f for f in page.find("figure") if f["attrs"].get("data-chart") == chart]
        assert page.find("svg", within=figure)
    (heatmap,) = [f for f in page.find("figure") if f["attrs"].get("data-chart") == "heatmap"]
    hatches = [p for p in page.find("path", within=heatmap) if (p["attrs"].get("d") or "").startswith("M-37.5,-15L-45")]
    assert len(hatches) == sum(1 for r in _rows(store) if r.delta and not r.delta.distinguishable)


def test_user_strings_are_escaped(written: Any) -> None:
    _, path, page = written
    html = path.read_text(encoding="utf-8")
    assert not page.find("script") and "<script>alert" not in html
    assert "&lt;script&gt;alert(" in html  # shown as text
    evil = [td for td in page.find("td", "candidate") if sb.EVIL in text(td)]
    assert len(evil) == 4  # two candidates, two scorers


def test_the_front_on_the_page_is_the_pareto_front_of_the_first_scorer(written: Any) -> None:
    store, _, page = written
    halluc = [r for r in _rows(store) if r.scorer == "halluc"]  # the first scorer: lower is better
    front = pareto_front([Point(r.candidate, r.cost, r.mean) for r in halluc], higher_is_better=False)
    assert [text(c) for c in page.find("code", "front")] == [p.label for p in front]
    by_hand = [r.candidate for r in sorted(halluc, key=lambda r: r.cost)]
    # every candidate costs more than the one before; on the front exactly those with a lower (better) mean
    # than every cheaper candidate
    kept = [c for i, c in enumerate(by_hand)
            if all(next(r.mean for r in halluc if r.candidate == c) < next(r.mean for r in halluc if r.candidate == d)
                   for d in by_hand[:i])]
    assert [p.label for p in front] == kept


def test_pareto_front_by_hand() -> None:
    points = [Point("a", 1.0, 0.50), Point("b", 2.0, 0.70), Point("c", 2.0, 0.60), Point("d", 3.0, 0.70),
              Point("e", 0.5, 0.40), Point("f", 4.0, 0.90), Point("g", 4.0, 0.90), Point("h", 5.0, 0.85)]
    assert [p.label for p in pareto_front(points)] == ["e", "a", "b", "f", "g"]
    # lower is better: the cheapest point also has the lowest value, so it dominates every other
    assert [p.label for p in pareto_front(points, higher_is_better=False)] == ["e"]
    assert [p.label for p in pareto_front([Point("x", 1, 0.3), Point("y", 2, 0.1)], higher_is_better=False)] == [
        "x", "y"]
    assert pareto_front([]) == []


def test_marginal_effects_by_hand() -> None:
    values = {"a1": {"t": "a", "k": 1}, "a2": {"t": "a", "k": 2}, "b1": {"t": "b", "k": 1}, "b2": {"t": "b", "k": 2}}
    means = {("a1", "s"): 0.2, ("a2", "s"): 0.4, ("b1", "s"): 0.6, ("b2", "s"): None}
    got = {(m.axis, m.value, m.scorer): (m.mean, m.candidates)
           for m in marginal_effects({"t": ["a", "b"], "k": [1, 2]}, values, means, ["s"])}
    assert got == {("t", "a", "s"): (pytest.approx(0.3), 2), ("t", "b", "s"): (0.6, 1),
                   ("k", "1", "s"): (pytest.approx(0.4), 2), ("k", "2", "s"): (0.4, 1)}


def test_the_page_shows_each_axis_value_mean_of_its_candidates(written: Any) -> None:
    store, _, page = written
    mean = {(r.candidate, r.scorer): r.mean for r in _rows(store)}
    tables = {t["attrs"]["data-axis"]: t for t in page.find("table", "marginal")}
    assert set(tables) == {"target", "temperature"}
    for axis, values in sb.AXES.items():
        for value in values:
            (tr,) = [tr for tr in page.find("tr", within=tables[axis]) if tr["attrs"].get("data-value") == str(value)]
            for scorer in ("tone", "halluc"):
                having = [sb.label(t, k) for t in sb.AXES["target"] for k in sb.AXES["temperature"]
                          if (t if axis == "target" else k) == value]
                expected = statistics.fmean(mean[c, scorer] for c in having)
                (td,) = [td for td in page.find("td", within=tr) if td["attrs"].get("data-scorer") == scorer]
                assert text(td) == f"{expected:.3f} (2)"


def test_every_run_is_linked_to_its_report_which_exists(written: Any) -> None:
    _, path, page = written
    links = [a["attrs"]["href"] for a in page.find("a", within=page.find("table", "runs")[0])]
    assert len(links) == 8 and all(not h.startswith(("http:", "https:", "/")) for h in links)
    for href in links:
        target = (path.parent / unquote(href)).resolve()
        assert target.is_file() and target.parent == path.parent and "run-" in target.name


def _offline(html: str) -> None:
    page = Page(html)
    assert not page.find("script") and not page.find("link") and not page.find("iframe")
    for e in page.elements:
        for key in ("src", "href"):
            value = e["attrs"].get(key) or ""
            assert e["tag"] == "a" or not value.startswith(("http:", "https:", "//")), e
    assert "@import" not in html and "url(http" not in html
    csp = [m for m in page.find("meta") if m["attrs"].get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]["attrs"]["content"]


def test_cli_leaderboard_html_in_a_real_process(tmp_path: Path) -> None:
    sb.build(tmp_path / "evals.duckdb")
    (tmp_path / "elsewhere").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API_URL", "PREFECT_UI_URL"))}
    done = subprocess.run([CLI, "--db", str(tmp_path / "evals.duckdb"), "leaderboard", sb.SWEEP_ID[:8], "--format",
                           "html", "-o", "elsewhere/out.html"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "elsewhere" / "out.html"
    assert out.is_file() and str(out) in done.stdout.replace("\n", "")
    html = out.read_text(encoding="utf-8")
    _offline(html)
    links = [a["attrs"]["href"] for a in Page(html).find("a")]
    assert len(links) == 4 and all(h.startswith("../reports/") and (out.parent / unquote(h)).is_file() for h in links)
