"""compare_runs and item_deltas against statistics computed here in plain Python."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalduck.flows.store import Store


def _t_quantile_975(df: int) -> float:
    """Independent of evalduck.flows.store.tdist: Simpson integration of the t density, then bisection."""
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf_above_zero(t: float, steps: int = 1000) -> float:
        h = t / steps
        f = [math.exp(log_c - (df + 1) / 2 * math.log1p((i * h) ** 2 / df)) for i in range(steps + 1)]
        return h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))

    low, high = 0.0, 20.0
    if df == 1:
        return math.tan(math.pi * 0.475)  # Cauchy: exact
    for _ in range(45):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf_above_zero(mid) < 0.475 else (low, mid)
    return (low + high) / 2


def _expected(cells_a: dict[tuple[str, str], Any], cells_b: dict[tuple[str, str], Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    scorers = {s for _, s in cells_a} & {s for _, s in cells_b}
    for scorer in sorted(scorers):
        a = {i: v for (i, s), v in cells_a.items() if s == scorer}
        b = {i: v for (i, s), v in cells_b.items() if s == scorer}
        scored_a = {i: v for i, v in a.items() if isinstance(v, float)}
        scored_b = {i: v for i, v in b.items() if isinstance(v, float)}
        if not scored_a or not scored_b:
            continue  # SPEC 5: one row per scorer scored in both runs
        deltas = [scored_b[i] - scored_a[i] for i in sorted(scored_a.keys() & scored_b.keys())]
        n = len(deltas)
        row: dict[str, Any] = {
            "mean_a": statistics.fmean(scored_a.values()) if scored_a else None,
            "mean_b": statistics.fmean(scored_b.values()) if scored_b else None,
            "n_paired": n,
            "mean_delta": statistics.fmean(deltas) if deltas else None,
            "n_improved": sum(d > 1e-9 for d in deltas),
            "n_regressed": sum(d < -1e-9 for d in deltas),
            "n_unchanged": sum(abs(d) <= 1e-9 for d in deltas),
            "n_errors_a": sum(v == "error" for v in a.values()),
            "n_errors_b": sum(v == "error" for v in b.values()),
            "ci_low": None,
            "ci_high": None,
        }
        if n >= 2:
            half = _t_quantile_975(n - 1) * statistics.stdev(deltas) / math.sqrt(n)
            row["ci_low"], row["ci_high"] = row["mean_delta"] - half, row["mean_delta"] + half
        out[scorer] = row
    return out


def _random_cells(rng: random.Random, items: int, scorers: list[str], shift: float) -> dict[tuple[str, str], Any]:
    cells: dict[tuple[str, str], Any] = {}
    for i in range(items):
        for s in scorers:
            roll = rng.random()
            if roll < 0.05:
                continue  # item not scored by this scorer in this run
            if roll < 0.12:
                cells[(f"i{i:04d}", s)] = "error"
            elif roll < 0.15:
                cells[(f"i{i:04d}", s)] = "skipped"
            else:
                cells[(f"i{i:04d}", s)] = min(1.0, max(0.0, round(rng.random() * 0.8 + shift, 2)))
    return cells


def _as_scores(cells: dict[tuple[str, str], Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for (item, scorer), value in cells.items():
        out.setdefault(scorer, {})[item] = value
    return out


@pytest.mark.parametrize(("seed", "items"), [(1, 3), (2, 4), (3, 6), (4, 40), (5, 260)])
def test_compare_runs_matches_plain_python(store: Store, add_run: Any, seed: int, items: int) -> None:
    rng = random.Random(seed)
    cells_a = _random_cells(rng, items, ["s1", "s2", "only-a"], 0.1)
    cells_b = _random_cells(rng, items, ["s1", "s2", "only-b"], 0.15)
    add_run(store, "A", _as_scores(cells_a), minutes=0)
    add_run(store, "B", _as_scores(cells_b), minutes=1)
    rows = {r["scorer_id"]: r for r in store.compare("A", "B")}
    expected = _expected(cells_a, cells_b)
    assert set(rows) == set(expected) == {"s1", "s2"}
    for scorer, want in expected.items():
        got = rows[scorer]
        for key, value in want.items():
            if value is None or isinstance(value, int):
                assert got[key] == value, (scorer, key)
            else:
                assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), (scorer, key)


def test_t_quantiles_in_the_file_match_an_independent_computation(store: Store) -> None:
    for df in (1, 2, 3, 4, 9, 29, 100, 101, 149, 1000):
        (got,) = store.sql("SELECT t975(?)", [df]).rows[0]
        assert got == pytest.approx(_t_quantile_975(df), rel=1e-8), df


def test_warnings_name_what_differs(store: Store, add_run: Any) -> None:
    add_run(store, "A", {"s": {"i1": 0.5, "i2": 0.5}}, minutes=0)
    add_run(store, "B", {"s": {"i1": 0.6, "i2": 0.4}}, minutes=1)
    add_run(
        store, "C", {"s": {"i1": 0.6, "i2": 0.4}}, minutes=2,
        dataset_hash="hash-2", scorer_version="2", judge_model="openai/gpt-x", status="failed",
    )
    assert store.compare("A", "B")[0]["warning"] is None
    warning = store.compare("A", "C")[0]["warning"]
    assert "dataset hash differs (hash-1 vs hash-2)" in warning
    assert "scorer version differs (1 vs 2)" in warning
    assert "judge model differs (none vs openai/gpt-x)" in warning
    assert "run B is failed" in warning


def test_a_scorer_not_scored_in_one_run_gets_no_row(store: Store, add_run: Any) -> None:
    add_run(store, "A", {"s": {"i1": 0.5, "i2": 0.7}, "judge": {"i1": 1.0, "i2": 0.3}}, minutes=0)
    add_run(store, "B", {"s": {"i1": 0.6, "i2": 0.4}, "judge": {"i1": "skipped", "i2": "error"}}, minutes=1)
    assert [r["scorer_id"] for r in store.compare("A", "B")] == ["s"]
    assert [r["scorer_id"] for r in store.compare("B", "A")] == ["s"]


def test_item_deltas_worst_first(store: Store, add_run: Any) -> None:
    add_run(store, "A", {"s": {"i1": 0.9, "i2": 0.5, "i3": 0.5, "i4": 0.2}}, minutes=0)
    add_run(store, "B", {"s": {"i1": 0.1, "i2": 0.6, "i3": "error", "i5": 0.3}}, minutes=1)
    rows = store.item_deltas("A", "B", "s")
    assert [r["item_id"] for r in rows[:2]] == ["i1", "i2"]
    assert rows[0]["delta"] == pytest.approx(-0.8) and rows[0]["input"] == '"question i1"'
    assert {r["item_id"] for r in rows[2:]} == {"i3", "i4", "i5"} and all(r["delta"] is None for r in rows[2:])


def test_plain_duckdb_connection_can_use_the_stored_sql(db_path: Path, store: Store, add_run: Any) -> None:
    add_run(store, "A", {"s": {"i1": 0.2, "i2": 0.4, "i3": 0.6}}, name="nightly", minutes=0)
    add_run(store, "B", {"s": {"i1": 0.3, "i2": 0.4, "i3": 0.9}}, name="nightly", minutes=1)
    expected = store.compare("A", "B")
    con = duckdb.connect(str(db_path), read_only=True)  # no evalduck code involved from here
    try:
        cursor = con.execute("SELECT * FROM compare_runs(previous_run(), latest_run())")
        columns = [d[0] for d in cursor.description]
        got = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
        worst = con.execute("SELECT item_id FROM item_deltas('A', run_named('nightly'), 's') LIMIT 1").fetchone()
        summary = con.execute("SELECT count(*) FROM run_scorer_summary").fetchone()
    finally:
        con.close()
    assert got == expected
    assert got[0]["n_improved"] == 2 and got[0]["n_unchanged"] == 1
    assert worst == ("i2",) and summary == (2,)


def test_a_lower_is_better_scorer_improves_when_it_falls(store: Store, add_run: Any) -> None:
    lower = {"hallucination-scorer": False, "s": True}
    add_run(store, "A", {"hallucination-scorer": {"i1": 0.5, "i2": 0.5, "i3": 0.2}, "s": {"i1": 0.5, "i2": 0.5}},
            minutes=0, directions=lower)
    add_run(store, "B", {"hallucination-scorer": {"i1": 0.1, "i2": 0.9, "i3": 0.2}, "s": {"i1": 0.1, "i2": 0.9}},
            minutes=1, directions=lower)
    rows = {r["scorer_id"]: r for r in store.compare("A", "B")}
    assert rows["hallucination-scorer"]["higher_is_better"] is False and rows["s"]["higher_is_better"] is True
    # The same deltas (-0.4, +0.4): for the lower-is-better scorer the fall is the improvement.
    assert (rows["hallucination-scorer"]["n_improved"], rows["hallucination-scorer"]["n_regressed"]) == (1, 1)
    assert rows["hallucination-scorer"]["mean_delta"] == pytest.approx(0.0) == rows["s"]["mean_delta"]
    # Worst first is the largest rise.
    assert [r["item_id"] for r in store.item_deltas("A", "B", "hallucination-scorer")][:1] == ["i2"]
    assert [r["item_id"] for r in store.item_deltas("A", "B", "s")][:1] == ["i1"]
    assert [w["item_id"] for w in store.worst_items("B", 1) if w["scorer_id"] == "hallucination-scorer"] == ["i2"]
    assert store.sql("SELECT scorer_id, higher_is_better FROM run_scorer_summary WHERE run_id = 'B' ORDER BY 1"
                     ).rows == [("hallucination-scorer", False), ("s", True)]


def test_a_direction_that_changed_between_runs_is_named(store: Store, add_run: Any) -> None:
    add_run(store, "A", {"s": {"i1": 0.5, "i2": 0.5}}, minutes=0, directions={"s": True})
    add_run(store, "B", {"s": {"i1": 0.6, "i2": 0.4}}, minutes=1, directions={"s": False})
    (row,) = store.compare("A", "B")
    assert row["higher_is_better"] is False and "direction differs (run B's is used: lower is better)" in row["warning"]
