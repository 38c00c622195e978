"""`evalduck sweep` on an LLM judge (issue 27): the real command in a subprocess, judged by the fake
OpenAI-compatible judge over HTTP, recording to the session's Prefect server. A 2 x 2 sweep with repeats whose
leaderboard is checked against an independent computation from the stored rows (DuckDB, scipy, Holm by hand);
the sweep's one concurrency budget as the judge sees it; and the shared step cache, counted in the judge's log."""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from scipy import stats

from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, default_responder, request_step

CLI = str(Path(sys.executable).with_name("evalduck"))
QUESTIONS = ["Can I return it?", "Is the shop open on Sunday?", "Do you ship abroad?", "How long is the warranty?",
             "Can I pay by card?", "Where is my order?"]
TARGETS = '''\
def a(question):
    return f"You asked: {question} Yes, that works. Our team is glad to help you today."

def b(question):
    if len(question) % 2:
        return f"Thanks a lot for asking! {question} Absolutely. We love helping. Enjoy it."
    return f"{question} No. That is not possible, sorry. Nothing can be done."
'''
STEPS = 3  # judge requests per cell of answer-relevancy-scorer: preprocess, analyze, generate_reason
CONCURRENCY = 3
SCORERS = ("answer-relevancy-scorer", "tone-scorer")
# Candidates run side by side under one budget (flows/engine/budget.py) rather than one after another.


def _verdict(model: str, statement: str) -> str:
    """A fake judge per model: the same statement gets another verdict from the other model (kind says yes more)."""
    h = int(hashlib.sha256(f"{model}|{statement}".encode()).hexdigest(), 16) % 6
    if model == "judge-kind":
        return "no" if h == 0 else "unsure" if h == 1 else "yes"
    return "yes" if h < 2 else "unsure" if h < 4 else "no"


def _responder(req: dict[str, Any]) -> Any:
    return default_responder(req, lambda statement: _verdict(str(req.get("model")), statement))


def _env() -> dict[str, str]:
    """The user's environment, recording to the session's Prefect server (tests/conftest.py's harness)."""
    from prefect.settings import get_current_settings

    environ = {k: v for k, v in os.environ.items() if k != "EVALDUCK_EPHEMERAL"}
    return {**environ, "OPENAI_API_KEY": "sk-fake-key-for-tests", "PREFECT_API_URL": str(get_current_settings().api.url)}


def evalduck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=_env(),
                          stdin=subprocess.DEVNULL)


def _stored(folder: Path, query: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(folder / "evals.duckdb"), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def _sweep(tmp: Path, judge: FakeOpenAIServer, spec: str, concurrency: int = CONCURRENCY) -> Path:
    """A project folder (targets module, dataset, sweep.yaml whose base judges on ``judge``), swept once. No HTML
    report per run, and judge requests from the flow's process rather than a judge child per run (each imports
    litellm: seconds of CPU on a small machine): the budget and the step cache are the flow's either way."""
    (tmp / "targets.py").write_text(TARGETS)
    (tmp / "data.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "input": q}) + "\n"
                                            for i, q in enumerate(QUESTIONS)))
    (tmp / "sweep.yaml").write_text(
        f"base:\n  dataset: data.jsonl\n  scorers: [{', '.join(SCORERS)}]\n  judge_api_base: {judge.base_url}\n"
        f"  concurrency: {concurrency}\n  report: false\n  judge_process: false\n{spec}")
    done = evalduck(tmp, "sweep", "sweep.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory, prefect_harness: None) -> Iterator[tuple[Path, FakeOpenAIServer]]:
    """A 2 x 2 sweep (target x judge model) run twice per candidate, on a judge slow enough that requests overlap."""
    with FakeOpenAIServer(latency=0.1, responder=_responder) as judge:
        folder = _sweep(tmp_path_factory.mktemp("grid"), judge, (
            "name: grid\naxes:\n  target: [\"targets:a\", \"targets:b\"]\n"
            "  judge_model: [openai/judge-strict, openai/judge-kind]\nrepeat: 2\n"))
        yield folder, judge


def _p(diffs: list[float]) -> float:
    """The paired t-test's two-sided p (scipy); when every difference is the same scipy says nan, the
    leaderboard says 1 (no difference) or 0 (the same non-zero difference on every item)."""
    if statistics.pstdev(diffs) == 0:
        return 1.0 if diffs[0] == 0 else 0.0
    return float(stats.ttest_1samp(diffs, 0.0).pvalue)


def _interval(values: list[float], level: float) -> tuple[float, float]:
    mean, sem = statistics.fmean(values), stats.sem(values)
    return (mean, mean) if sem == 0 else stats.t.interval(level, len(values) - 1, loc=mean, scale=sem)


def _holm(ps: dict[str, float]) -> tuple[dict[str, float], dict[str, set[float]]]:
    """Holm's step-down adjusted p-values (monotone, capped at 1), and each comparison's possible levels: the
    i-th smallest of m at 1 - 0.05 / (m - i + 1) (comparisons tied on p share the levels of their ranks)."""
    order = sorted(ps, key=ps.__getitem__)
    m, running, adjusted, levels = len(order), 0.0, {}, {}
    for i, label in enumerate(order, start=1):
        running = max(running, min(1.0, (m - i + 1) * ps[label]))
        adjusted[label] = running
    for label in order:
        ranks = [i for i, other in enumerate(order, start=1) if ps[other] == ps[label]]
        levels[label] = {1 - 0.05 / (m - i + 1) for i in ranks}
    return adjusted, levels


def test_a_2x2_judge_sweep_with_repeats_and_its_leaderboard_matches_the_stored_rows(
        grid: tuple[Path, FakeOpenAIServer]) -> None:
    folder, _ = grid
    labels = ["targets:a | openai/judge-strict", "targets:a | openai/judge-kind",  # the axes' product, in order
              "targets:b | openai/judge-strict", "targets:b | openai/judge-kind"]
    runs = _stored(folder, "SELECT candidate, list(sweep_repeat ORDER BY sweep_repeat), min(status) FROM runs "
                           "GROUP BY ALL ORDER BY ALL")
    assert runs == sorted((label, [0, 1], "completed") for label in labels)
    base = labels[0]
    # Cells: an item's score averaged over the candidate's repeats.
    cells: dict[str, dict[str, dict[str, float]]] = {}
    for candidate, scorer, item, score in _stored(folder, (
            "SELECT r.candidate, s.scorer_id, s.item_id, avg(s.score) FROM scores s JOIN runs r USING (run_id) "
            "WHERE s.status = 'scored' GROUP BY ALL")):
        cells.setdefault(scorer, {}).setdefault(candidate, {})[item] = score
    judged = {c: sorted(cells["answer-relevancy-scorer"][c].values()) for c in labels}
    assert len({tuple(v) for v in judged.values()}) == 4, "each candidate's judge must score differently"

    board = evalduck(folder, "leaderboard", "grid", "--format", "json")
    assert board.returncode == 0, board.stderr
    doc = json.loads(board.stdout)
    assert (doc["baseline"], doc["status"]) == (base, "completed")
    rows = {(r["scorer"], r["candidate"]): r for r in doc["rows"]}
    assert set(rows) == {(s, c) for s in SCORERS for c in labels}
    for scorer in SCORERS:
        per = cells[scorer]
        assert all(len(per[c]) == len(QUESTIONS) for c in labels)
        diffs = {c: [per[c][i] - per[base][i] for i in sorted(per[base])] for c in labels if c != base}
        ps = {c: _p(d) for c, d in diffs.items()}
        adjusted, levels = _holm(ps)
        for c in labels:
            row, values = rows[scorer, c], list(per[c].values())
            assert row["n"] == len(values) and row["mean"] == pytest.approx(statistics.fmean(values))
            assert (row["low"], row["high"]) == pytest.approx(_interval(values, 0.95))
            if c == base:
                assert row["baseline"] and row["delta"] is None
                continue
            delta, d = row["delta"], diffs[c]
            assert delta["n"] == len(QUESTIONS) and delta["delta"] == pytest.approx(statistics.fmean(d))
            assert delta["p"] == pytest.approx(ps[c], abs=1e-12)
            assert delta["p_holm"] == pytest.approx(adjusted[c], abs=1e-12)
            assert delta["distinguishable"] == (adjusted[c] < 0.05)
            assert any(delta["level"] == pytest.approx(level) for level in levels[c])
            assert (delta["low"], delta["high"]) == pytest.approx(_interval(d, delta["level"]))
            assert (delta["wins"], delta["ties"], delta["losses"]) == (
                sum(x > 1e-9 for x in d), sum(abs(x) <= 1e-9 for x in d), sum(x < -1e-9 for x in d))
        # Tied p-values (tone-scorer's two targets:b candidates) take the levels of their ranks, one each.
        assert sorted(rows[scorer, c]["delta"]["level"] for c in diffs) == pytest.approx(
            sorted(1 - 0.05 / k for k in range(1, len(diffs) + 1)))
        ranked = [r for r in doc["rows"] if r["scorer"] == scorer]
        assert [r["mean"] for r in ranked] == sorted((r["mean"] for r in ranked), reverse=True)
        assert ranked[0]["best"] and not any(r["best"] for r in ranked[1:])
    # The judge model matters to the judge scorer only: the code scorer sees the same outputs under either judge.
    assert rows["tone-scorer", labels[1]]["delta"]["delta"] == 0.0
    assert rows["tone-scorer", labels[1]]["delta"]["p"] == 1.0


def test_the_judge_never_has_more_than_the_sweeps_concurrency_in_flight(grid: tuple[Path, FakeOpenAIServer]) -> None:
    """One budget for the whole sweep, the base's `concurrency:` (items in flight; one judge scorer asks one
    step of an item at a time): the judge (0.1 s an answer, every candidate asking it) never has more requests
    open than that, however the runs are scheduled; and it had that many, so the budget was used, not merely
    never reached."""
    _, judge = grid
    assert judge.request_count > 0
    assert judge.max_in_flight == CONCURRENCY


def test_a_repeat_asks_the_target_and_the_judge_afresh(grid: tuple[Path, FakeOpenAIServer]) -> None:
    """Each of the 4 candidates asks each judge step of each item once per run: its second run (repeat) asks again
    rather than copying the first from the step cache, which would show no run-to-run noise at all (`repeat:` is
    "runs of each candidate, to see run-to-run noise", docs/sweeps.md). The request count is the proof: this
    fake judge is deterministic, so equal stored scores alone would not be."""
    folder, judge = grid
    asked: dict[tuple[str, str], int] = {}
    for req in judge.requests:
        key = (str(req.get("model")), request_step(req))
        asked[key] = asked.get(key, 0) + 1
    per_model = 2 * 2 * len(QUESTIONS)  # two targets per judge model, two runs each, each item once a run
    assert asked == {(m, s): per_model for m in ("judge-strict", "judge-kind")
                     for s in ("preprocess", "analyze", "generate_reason")}
    refreshed = _stored(folder, "SELECT sweep_repeat, list(DISTINCT (config->>'$.refresh')::BOOLEAN) FROM runs "
                                "GROUP BY ALL ORDER BY ALL")
    assert refreshed == [(0, [False]), (1, [True])]


def test_a_candidate_the_judge_cannot_tell_from_another_makes_no_judge_request(
        tmp_path_factory: pytest.TempPathFactory, prefect_harness: None) -> None:
    """Two candidates that differ only in the judge's timeout (never part of a cache key): the second is
    answered by the shared step cache, so the judge's log holds one request per step and item. The budget lets
    every item of both in at once and the judge is slow, so candidates that run side by side ask it together."""
    with FakeOpenAIServer(latency=0.5, responder=_responder) as judge:
        folder = _sweep(tmp_path_factory.mktemp("twins"), judge, (
            "name: twins\ncandidates:\n"
            "  - {label: first, target: \"targets:b\", judge_model: openai/judge-kind,"
            " answer-relevancy-scorer.timeout: 30}\n"
            "  - {label: second, target: \"targets:b\", judge_model: openai/judge-kind,"
            " answer-relevancy-scorer.timeout: 60}\n"), concurrency=2 * len(QUESTIONS))
    assert _stored(folder, "SELECT candidate, status FROM runs ORDER BY candidate") == [
        ("first", "completed"), ("second", "completed")]
    same = _stored(folder, "SELECT count(*) FROM scores a JOIN scores b USING (item_id, scorer_id) "
                           "JOIN runs ra ON ra.run_id = a.run_id JOIN runs rb ON rb.run_id = b.run_id "
                           "WHERE ra.candidate = 'first' AND rb.candidate = 'second' AND a.score = b.score")
    assert same == [(len(QUESTIONS) * len(SCORERS),)]
    asked = [json.dumps(r.get("messages"), sort_keys=True) for r in judge.requests]
    assert len(asked) == STEPS * len(QUESTIONS), f"{len(asked)} judge requests, {len(asked) - len(set(asked))} twice"
