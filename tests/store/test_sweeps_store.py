"""A sweep in the results file (flows/store/sweeps.py): recorded, its runs named, found again, and its leaderboard
summed up in SQL equal to the same leaderboard summed up item by item in Python."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from evalduck.flows.report.leaderboard import CandidateScores, leaderboard
from evalduck.flows.report.sweep_board import sweep_rows
from evalduck.flows.store import ScoreRow, Store
from evalduck.flows.store.sweeps import (
    UnknownSweepError,
    finish_sweep,
    resolve_sweep,
    start_sweep,
    sweep_runs,
    tag_run,
)


def _sweep(store: Store, sweep_id: str, name: str, runs: dict[tuple[str, int], dict[str, dict[str, float]]],
           baseline: str) -> None:
    start_sweep(store, sweep_id, name=name, file="s.yaml", spec={}, axes={}, baseline=baseline, flow_run_id=None)
    for (candidate, repeat), scores in runs.items():
        run_id = f"{sweep_id}-{candidate}-{repeat}"
        store.start_run(run_id, f"{name}/{candidate}", "d.jsonl", "h", {}, directions={"tone": True, "halluc": False})
        tag_run(store, run_id, sweep_id, candidate, repeat)
        store.write_batch(run_id, scores=[
            ScoreRow(run_id=run_id, item_id=item, scorer_id=scorer, scorer_version="1", score=value)
            for scorer, cells in scores.items() for item, value in cells.items()])
        store.finish_run(run_id, "completed")
    finish_sweep(store, sweep_id, "completed")


def test_the_leaderboard_summed_up_in_sql_equals_the_one_summed_up_item_by_item(tmp_path: Path) -> None:
    rng = random.Random(3)
    items = [f"q{i}" for i in range(30)]
    runs: dict[tuple[str, int], dict[str, dict[str, float]]] = {}
    for candidate, shift in (("base", 0.0), ("up", 0.1), ("flat", 0.0)):
        for repeat in range(2):
            kept = items if candidate != "flat" else items[3:]  # `flat` misses three items
            runs[candidate, repeat] = {
                "tone": {i: round(min(1, max(0, 0.5 + shift + rng.gauss(0, 0.1))), 3) for i in kept},
                "halluc": {i: round(min(1, max(0, 0.4 - shift + rng.gauss(0, 0.1))), 3) for i in kept}}
    store = Store(tmp_path / "e.duckdb")
    _sweep(store, "s1", "mine", runs, "base")
    # Python's side: per item the mean over the candidate's two runs.
    by_python = leaderboard([
        CandidateScores(label=c, baseline=c == "base", scores={
            s: {i: (runs[c, 0][s][i] + runs[c, 1][s][i]) / 2 for i in runs[c, 0][s]} for s in ("tone", "halluc")})
        for c in ("base", "up", "flat")], {"halluc": False, "tone": True})
    by_sql = sweep_rows(store, "s1", "base", None)
    assert [(r.scorer, r.candidate, r.best) for r in by_sql] == [(r.scorer, r.candidate, r.best) for r in by_python]
    for a, b in zip(by_sql, by_python, strict=True):
        assert (a.n, a.mean, a.low, a.high) == pytest.approx((b.n, b.mean, b.low, b.high))
        if b.delta is None:
            assert a.delta is None
        else:
            assert a.delta is not None
            assert (a.delta.delta, a.delta.low, a.delta.high, a.delta.p, a.delta.p_holm) == pytest.approx(
                (b.delta.delta, b.delta.low, b.delta.high, b.delta.p, b.delta.p_holm))
            assert (a.delta.n, a.delta.wins, a.delta.ties, a.delta.losses) == (
                b.delta.n, b.delta.wins, b.delta.ties, b.delta.losses)
    flat = next(r for r in by_sql if r.candidate == "flat" and r.scorer == "tone")
    assert flat.n == 27 and flat.delta is not None and flat.delta.n == 27


def test_a_sweep_is_found_by_id_prefix_name_or_latest_and_lists_its_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "e.duckdb")
    cells = {"tone": {"q1": 0.5, "q2": 0.6}}
    _sweep(store, "aaaa-1111", "first", {("a", 0): cells, ("b", 0): cells}, "a")
    _sweep(store, "bbbb-2222", "second", {("a", 0): cells, ("a", 1): cells}, "a")
    assert resolve_sweep(store)["sweep_id"] == "bbbb-2222"
    assert resolve_sweep(store, "first")["sweep_id"] == "aaaa-1111"
    assert resolve_sweep(store, "aaaa")["name"] == "first"
    assert [(r["candidate"], r["sweep_repeat"], r["status"]) for r in sweep_runs(store, "bbbb-2222")] == [
        ("a", 0, "completed"), ("a", 1, "completed")]
    with pytest.raises(UnknownSweepError, match=r"sweep 'nope': no sweep has that id or name; the newest: second "
                                                r"\(bbbb-222\), first \(aaaa-111\)"):
        resolve_sweep(store, "nope")
