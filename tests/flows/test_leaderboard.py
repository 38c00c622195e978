"""The sweep leaderboard's statistics (flows/report/leaderboard.py) against independent computations: scipy.stats'
paired t-test and t intervals, Holm's procedure written out here, and counts made by hand."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalduck.flows.report.leaderboard import ALPHA, CandidateScores, holm, leaderboard


def _holm_reference(ps: list[float]) -> list[float]:
    """Holm (1979) as textbooks state it: sort, multiply the i-th smallest by (m - i + 1), running maximum, cap at 1."""
    m = len(ps)
    ranked = sorted(enumerate(ps), key=lambda pair: pair[1])
    out = [0.0] * m
    best = 0.0
    for i, (index, p) in enumerate(ranked, start=1):
        best = max(best, (m - i + 1) * p)
        out[index] = min(1.0, best)
    return out


def _candidates(seed: int = 7, items: int = 40) -> list[CandidateScores]:
    rng = random.Random(seed)
    truth = {f"q{i}": rng.random() for i in range(items)}
    shifts = {"base": 0.0, "better": 0.15, "same": 0.0, "worse": -0.1}
    out = []
    for label, shift in shifts.items():
        tone = {i: min(1.0, max(0.0, v + shift + rng.gauss(0, 0.1))) for i, v in truth.items()}
        halluc = {i: min(1.0, max(0.0, 0.5 - shift + rng.gauss(0, 0.1))) for i in truth}
        out.append(CandidateScores(label=label, baseline=label == "base", scores={"tone": tone, "halluc": halluc},
                                   judge_tokens=1000 * len(label), cost={"base": 1.0, "better": 1.6}.get(label, 1.2),
                                   latencies=[rng.uniform(0.1, 2.0) for _ in range(items)]))
    # "worse" misses two items: its comparison is over the 38 both have
    worse = out[3]
    out[3] = CandidateScores(label="worse", scores={s: {i: v for i, v in cells.items() if i not in ("q0", "q1")}
                                                    for s, cells in worse.scores.items()},
                             judge_tokens=worse.judge_tokens, cost=worse.cost, latencies=worse.latencies)
    return out


def test_holm_matches_the_textbook_procedure() -> None:
    for ps in ([0.01, 0.04, 0.03, 0.005], [0.5], [0.2, 0.2, 0.01], [0.04, 0.04, 0.04], []):
        assert holm(ps) == pytest.approx(_holm_reference(ps))


@settings(max_examples=200)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_never_lowers_a_p_value_and_keeps_their_order(ps: list[float]) -> None:
    adjusted = holm(ps)
    assert adjusted == pytest.approx(_holm_reference(ps))
    assert all(a >= p - 1e-12 and a <= 1.0 for a, p in zip(adjusted, ps, strict=True))
    ordered = sorted(range(len(ps)), key=lambda i: ps[i])
    assert all(adjusted[a] <= adjusted[b] + 1e-12 for a, b in zip(ordered, ordered[1:], strict=False))


def test_each_figure_against_scipy_and_counts_by_hand() -> None:
    candidates = _candidates()
    by_label = {c.label: c for c in candidates}
    rows = leaderboard(candidates, {"tone": True, "halluc": False}, by="tone")
    assert [r.scorer for r in rows] == ["tone"] * 4 + ["halluc"] * 4
    base = by_label["base"]
    for scorer, higher in (("tone", True), ("halluc", False)):
        block = {r.candidate: r for r in rows if r.scorer == scorer}
        others = [c for c in candidates if not c.baseline]
        ps = []
        for c in others:
            common = sorted(c.scores[scorer].keys() & base.scores[scorer].keys())
            a = [c.scores[scorer][i] for i in common]
            b = [base.scores[scorer][i] for i in common]
            ps.append(stats.ttest_rel(a, b).pvalue)
        adjusted = _holm_reference(ps)
        order = sorted(range(len(ps)), key=lambda i: ps[i])
        for rank, i in enumerate(order):
            c = others[i]
            row = block[c.label]
            common = sorted(c.scores[scorer].keys() & base.scores[scorer].keys())
            sign = 1 if higher else -1
            d = [sign * (c.scores[scorer][k] - base.scores[scorer][k]) for k in common]
            level = 1 - ALPHA / (len(ps) - rank)
            low, high = stats.t.interval(level, len(d) - 1, loc=sum(d) / len(d), scale=stats.sem(d))
            assert row.delta is not None and row.delta.n == len(common)
            assert row.delta.delta == pytest.approx(sum(d) / len(d))
            assert (row.delta.low, row.delta.high) == pytest.approx((low, high))
            assert row.delta.p == pytest.approx(ps[i]) and row.delta.p_holm == pytest.approx(adjusted[i])
            assert (row.delta.wins, row.delta.ties, row.delta.losses) == (
                sum(x > 0 for x in d), sum(x == 0 for x in d), sum(x < 0 for x in d))
            values = list(c.scores[scorer].values())
            mlow, mhigh = stats.t.interval(0.95, len(values) - 1, loc=sum(values) / len(values), scale=stats.sem(values))
            assert (row.mean, row.low, row.high) == pytest.approx((sum(values) / len(values), mlow, mhigh))
        assert block["base"].delta is None and block["base"].baseline
    tone = [r for r in rows if r.scorer == "tone"]
    assert [r.candidate for r in tone][0] == "better" and tone[0].best and not any(r.best for r in tone[1:])
    halluc = [r for r in rows if r.scorer == "halluc"]
    assert halluc[0].candidate == "better" and halluc[0].mean == min(r.mean for r in halluc)  # lower is better
    better = next(r for r in tone if r.candidate == "better")
    assert better.delta is not None and better.delta.distinguishable and better.delta.delta > 0.1
    assert better.cost_per_point == pytest.approx((1.6 - 1.0) / (better.delta.delta / 0.01))
    same = next(r for r in tone if r.candidate == "same")
    assert same.delta is not None and not same.delta.distinguishable
    assert (same.cost_per_point is None) == (same.delta.delta <= 0)
    worse = next(r for r in tone if r.candidate == "worse")
    assert worse.delta is not None and worse.delta.n == 38 and worse.n == 38 and worse.delta.delta < 0
    lat = sorted(by_label["base"].latencies)
    row = next(r for r in tone if r.candidate == "base")
    assert row.latency_p50 == pytest.approx(float(stats.scoreatpercentile(lat, 50)))
    assert row.latency_p95 == pytest.approx(float(stats.scoreatpercentile(lat, 95)))


def test_identical_candidates_tie_on_every_item() -> None:
    cells = {"tone": {f"q{i}": i / 10 for i in range(10)}}
    rows = leaderboard([CandidateScores("a", cells, baseline=True), CandidateScores("b", cells)], {"tone": True})
    delta = next(r for r in rows if r.candidate == "b").delta
    assert delta is not None and (delta.wins, delta.ties, delta.losses) == (0, 10, 0)
    assert delta.p == 1.0 and not delta.distinguishable and delta.delta == 0


def test_a_scorer_skipped_throughout_has_no_rows() -> None:
    cells = {"tone": {f"q{i}": i / 10 for i in range(10)}}  # answer-relevancy: no scored cell (no judge model)
    rows = leaderboard([CandidateScores("a", cells, baseline=True), CandidateScores("b", cells)],
                       {"answer-relevancy": True, "tone": True})
    assert {r.scorer for r in rows} == {"tone"} and len(rows) == 2


def test_bad_input_is_a_clear_error() -> None:
    cells = {"tone": {"q1": 0.5}}
    with pytest.raises(ValueError, match="exactly one baseline candidate, got 0"):
        leaderboard([CandidateScores("a", cells)], {"tone": True})
    with pytest.raises(ValueError, match="no scorer 'nope' in this sweep; its scorers: tone"):
        leaderboard([CandidateScores("a", cells, baseline=True)], {"tone": True}, by="nope")


def test_a_candidate_with_no_item_in_common_has_no_delta() -> None:
    rows = leaderboard([CandidateScores("a", {"tone": {"q1": 0.5}}, baseline=True),
                        CandidateScores("b", {"tone": {"q2": 0.9}})], {"tone": True})
    b = next(r for r in rows if r.candidate == "b")
    assert b.delta is None and b.mean == 0.9 and b.low is None and math.isclose(b.n, 1)


def test_the_text_formats_carry_the_same_figures() -> None:
    import csv
    import io
    import json

    from evalduck.flows.report.leaderboard_text import JSON_FORMAT, to_csv, to_json, to_markdown

    candidates = _candidates()
    candidates[1] = CandidateScores(label="pipe | and *stars*", scores=candidates[1].scores,
                                    judge_tokens=candidates[1].judge_tokens, cost=None, latencies=())
    rows = leaderboard(candidates, {"tone": True, "halluc": False}, by="tone")
    table = list(csv.DictReader(io.StringIO(to_csv(rows))))
    assert len(table) == len(rows) == 8
    for line, row in zip(table, rows, strict=True):
        assert line["candidate"] == row.candidate and line["scorer"] == row.scorer
        assert (float(line["mean"]) if line["mean"] else None) == pytest.approx(row.mean)
        if row.delta is not None:
            assert float(line["p_holm"]) == pytest.approx(row.delta.p_holm)
            assert line["distinguishable"] == str(row.delta.distinguishable)
    doc = json.loads(to_json(rows, sweep="s1"))
    assert doc["format"] == JSON_FORMAT and doc["sweep"] == "s1" and len(doc["rows"]) == 8
    first = doc["rows"][0]
    assert first["candidate"] == rows[0].candidate and first["best"] is True
    assert first["delta"]["p_holm"] == pytest.approx(rows[0].delta.p_holm)  # type: ignore[union-attr]
    md = to_markdown(rows)
    assert md.count("### ") == 2 and md.index("### tone") < md.index("### halluc")
    assert "pipe \\| and *stars*" in md  # a pipe cannot break the table
    assert "baseline" in md and "unknown" in md  # the candidate without a price says so
    lines = [line for line in md.splitlines() if line.startswith("| best |")]
    assert len(lines) == 2
