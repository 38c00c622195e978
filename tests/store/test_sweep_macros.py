"""The stored macros `sweep_leaderboard` and `sweep_pairs` (flows/store/macros.sql), checked figure by figure
against an independent computation from the cells as written (scipy's t) and against the Python leaderboard
(flows/report/sweep_board.py), and the sweep examples of docs/sql.md run from the page's own text."""

from __future__ import annotations

import csv
import io
import random
import re
import shutil
import statistics
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest
from scipy import stats

from evalduck.flows.report.sweep_board import sweep_rows
from evalduck.flows.store import ScoreRow, Store
from evalduck.flows.store.sweeps import finish_sweep, start_sweep, tag_run

DOC = Path(__file__).resolve().parents[2] / "docs" / "sql.md"
T0 = datetime(2026, 6, 1, tzinfo=timezone.utc)
BASE, BIG, SMALL = "model:openai/gpt-4o-mini", "model:openai/gpt-4o", "model:mistral/mistral-small"
TONE, HALLUC = "tone-scorer", "hallucination-scorer"
DIRECTIONS = {TONE: True, HALLUC: False}
ITEMS = [f"q{i:02d}" for i in range(12)]
OLD, NEW = "a1b2-old", "c3d4-new"  # two sweeps named the same: the name means the newest

# A cell as written: its score (None: not scored), status, and its judge request's tokens and cost.
Cell = dict[str, Any]
Runs = dict[tuple[str, int], dict[str, dict[str, Cell]]]


def _cell(score: float | None, status: str = "scored", cost: float | None = 0.001) -> Cell:
    judged = status != "skipped"
    return {"score": score, "status": status, "judge_model": "openai/gpt-4o-mini" if judged else None,
            "prompt_tokens": 100 if judged else None, "completion_tokens": 20 if judged else None,
            "cost": cost if judged else None}


def _runs(seed: int, candidates: dict[str, tuple[float, int]]) -> Runs:
    """Per (candidate, repeat): tone around 0.6 + shift, hallucination around 0.4 - shift."""
    rng = random.Random(seed)
    return {(label, repeat): {
        TONE: {i: _cell(round(min(1, max(0, 0.6 + shift + rng.gauss(0, 0.05))), 3)) for i in ITEMS},
        HALLUC: {i: _cell(round(min(1, max(0, 0.4 - shift + rng.gauss(0, 0.05))), 3)) for i in ITEMS}}
        for label, (shift, repeats) in candidates.items() for repeat in range(repeats)}


def _new_sweep_runs() -> Runs:
    runs = _runs(7, {BASE: (0.0, 1), BIG: (0.15, 2), SMALL: (0.0, 1)})
    base, big0, big1, small = runs[BASE, 0], runs[BIG, 0], runs[BIG, 1], runs[SMALL, 0]
    big0[HALLUC]["q04"] = _cell(base[HALLUC]["q04"]["score"] + 0.05)  # gpt-4o hallucinates more: a loss
    big1[HALLUC]["q04"] = _cell(base[HALLUC]["q04"]["score"] + 0.03)
    big1[HALLUC]["q05"] = _cell(None, "error")  # the item's cell is repeat 0's alone
    for item in ("q00", "q01", "q02"):  # ties
        small[TONE][item] = _cell(base[TONE][item]["score"])
    small[TONE]["q07"] = _cell(None, "skipped")  # an item mistral-small did not score
    small[HALLUC]["q03"] = _cell(0.5, cost=None)  # a judge request without a price
    return runs


def _write(store: Store, sweep_id: str, runs: Runs, minutes: int) -> None:
    start_sweep(store, sweep_id, name="prompts-vs-models", file="sweep.yaml", spec={}, axes={}, baseline=BASE,
                flow_run_id=None)
    for n, ((label, repeat), scorers) in enumerate(runs.items()):
        run_id = f"{sweep_id}-{n}"
        store.start_run(run_id, f"prompts-vs-models/{label}", "d.jsonl", "h", {}, directions=DIRECTIONS,
                        started_at=T0 + timedelta(minutes=minutes + n))
        tag_run(store, run_id, sweep_id, label, repeat)
        store.write_batch(run_id, scores=[
            ScoreRow(run_id=run_id, item_id=item, scorer_id=scorer, scorer_version="1", **cell)
            for scorer, cells in scorers.items() for item, cell in cells.items()], status="completed")
    finish_sweep(store, sweep_id, "completed")


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Runs]]:
    path = tmp_path_factory.mktemp("sweeps") / "evals.duckdb"
    store = Store(path)
    written = {OLD: _runs(11, {BASE: (0.0, 1), BIG: (0.1, 2)}), NEW: _new_sweep_runs()}
    _write(store, OLD, written[OLD], 0)
    _write(store, NEW, written[NEW], 60)
    return path, written


def _query(path: Path, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    """Through the plain duckdb API, as a user would with the duckdb shell."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        cursor = con.execute(sql, params or [])
        columns = [d[0] for d in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def _t_interval(values: list[float]) -> tuple[float | None, float | None]:
    if len(values) < 2:
        return None, None
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return statistics.fmean(values) - half, statistics.fmean(values) + half


def _expected(runs: Runs) -> tuple[dict[tuple[str, str], dict[str, Any]], list[tuple[str, str, str, float, float]]]:
    """The leaderboard's and the pairs' figures computed from the cells as written."""
    labels = list(dict.fromkeys(label for label, _ in runs))
    cells = {(label, scorer, item): statistics.fmean(scores) for label in labels for scorer in DIRECTIONS
             for item in ITEMS
             if (scores := [c[scorer][item]["score"] for (lab, _), c in runs.items()
                            if lab == label and c[scorer][item]["status"] == "scored"])}
    board, pairs = {}, []
    for label in labels:
        requests = [c for (lab, _), run in runs.items() if lab == label for per in run.values() for c in per.values()]
        tokens = sum((c["prompt_tokens"] or 0) + (c["completion_tokens"] or 0) for c in requests)
        judged = [c for c in requests if c["judge_model"]]
        cost = None if any(c["cost"] is None for c in judged) else sum(c["cost"] for c in judged)
        for scorer, higher in DIRECTIONS.items():
            mine = [cells[label, scorer, i] for i in ITEMS if (label, scorer, i) in cells]
            gains = []
            for item in ITEMS if label != BASE else ():
                if (label, scorer, item) in cells and (BASE, scorer, item) in cells:
                    b, c = cells[BASE, scorer, item], cells[label, scorer, item]
                    gains.append((c - b) if higher else (b - c))
                    pairs.append((label, scorer, item, b, c))
            low, high = _t_interval(mine)
            delta_low, delta_high = _t_interval(gains)
            board[label, scorer] = {
                "n": len(mine), "mean": statistics.fmean(mine), "ci_low": low, "ci_high": high,
                "n_pairs": len(gains) if label != BASE else None,
                "delta": statistics.fmean(gains) if gains else None, "delta_low": delta_low, "delta_high": delta_high,
                "wins": sum(g > 1e-9 for g in gains) if label != BASE else None,
                "ties": sum(abs(g) <= 1e-9 for g in gains) if label != BASE else None,
                "losses": sum(g < -1e-9 for g in gains) if label != BASE else None,
                "judge_tokens": tokens, "cost": cost, "is_baseline": label == BASE, "higher_is_better": higher}
    for scorer, higher in DIRECTIONS.items():
        ordered = sorted(labels, key=lambda lab, s=scorer, h=higher: -board[lab, s]["mean"] if h
                         else board[lab, s]["mean"])
        for rank, lab in enumerate(ordered, 1):
            board[lab, scorer]["rank"] = rank
    return board, pairs


@pytest.mark.parametrize("sweep_id", [OLD, NEW])
def test_the_leaderboard_macro_equals_the_figures_computed_from_the_cells(sweeps: tuple[Path, dict[str, Runs]],
                                                                          sweep_id: str) -> None:
    path, written = sweeps
    board, _ = _expected(written[sweep_id])
    rows = _query(path, "FROM sweep_leaderboard(?)", [sweep_id])
    assert sorted((r["candidate"], r["scorer_id"]) for r in rows) == sorted(board)
    for row in rows:
        want = board[row["candidate"], row["scorer_id"]]
        for key, value in want.items():
            assert row[key] == (value if value is None or isinstance(value, bool) else pytest.approx(value)), key
    assert [(r["scorer_id"], r["rank"]) for r in rows] == sorted((r["scorer_id"], r["rank"]) for r in rows)


def test_the_pairs_macro_lists_each_item_both_scored_with_its_outcome(sweeps: tuple[Path, dict[str, Runs]]) -> None:
    path, written = sweeps
    _, pairs = _expected(written[NEW])
    rows = Store(path).sql("FROM sweep_pairs('prompts-vs-models')").records()  # the name: the newest sweep
    got = {(r["candidate"], r["scorer_id"], r["item_id"]): r for r in rows}
    assert sorted(got) == sorted((label, scorer, item) for label, scorer, item, _, _ in pairs)
    for label, scorer, item, base, score in pairs:
        row = got[label, scorer, item]
        gain = (score - base) if DIRECTIONS[scorer] else (base - score)
        outcome = "tie" if abs(score - base) <= 1e-9 else "win" if gain > 0 else "loss"
        assert (row["baseline_score"], row["score"], row["delta"], row["gain"]) == pytest.approx(
            (base, score, score - base, gain))
        assert row["outcome"] == outcome
    assert (SMALL, TONE, "q07") not in got and (BASE, TONE, "q00") not in got
    assert got[SMALL, TONE, "q00"]["outcome"] == "tie" and got[BIG, HALLUC, "q04"]["outcome"] == "loss"
    assert got[BIG, HALLUC, "q05"]["score"] == written[NEW][BIG, 0][HALLUC]["q05"]["score"]


@pytest.mark.parametrize("sweep_id", [OLD, NEW])
def test_the_leaderboard_macro_agrees_with_the_python_leaderboard(sweeps: tuple[Path, dict[str, Runs]],
                                                                  sweep_id: str) -> None:
    path, _ = sweeps
    store = Store(path)
    sql = {(r["candidate"], r["scorer_id"]): r for r in store.sql("FROM sweep_leaderboard(?)", [sweep_id]).records()}
    python = sweep_rows(store, sweep_id, BASE)
    assert sorted(sql) == sorted((r.candidate, r.scorer) for r in python)
    single = sweep_id == OLD  # one comparison per scorer: Holm's level is 95%, the intervals are the same
    levels = set()
    for r in python:
        row = sql[r.candidate, r.scorer]
        assert (row["n"], row["mean"], row["ci_low"], row["ci_high"]) == pytest.approx((r.n, r.mean, r.low, r.high))
        assert (row["judge_tokens"], row["cost"], row["is_baseline"]) == (r.judge_tokens, pytest.approx(r.cost),
                                                                          r.baseline)
        assert (row["rank"] == 1) == r.best
        if r.delta is None:
            assert row["delta"] is None and row["is_baseline"]
            continue
        d = r.delta
        levels.add(round(d.level, 6))
        assert (row["n_pairs"], row["wins"], row["ties"], row["losses"]) == (d.n, d.wins, d.ties, d.losses)
        assert row["delta"] == pytest.approx(d.delta)
        if d.level == pytest.approx(0.95):  # Holm's level for the largest p-value, for a single comparison
            assert (row["delta_low"], row["delta_high"]) == pytest.approx((d.low, d.high))
        else:  # Holm's interval is wider (level above 95%) around the same delta
            assert not single and d.low < row["delta_low"] < row["delta_high"] < d.high
    assert levels == ({0.95} if single else {0.95, 0.975})
    assert sum(r.cost is None for r in python) == (0 if single else 2)


def test_a_sweep_is_named_as_evalduck_leaderboard_names_it(sweeps: tuple[Path, dict[str, Runs]]) -> None:
    path, _ = sweeps
    resolved = _query(path, "SELECT sweep_ref('latest') AS latest, sweep_ref('prompts-vs-models') AS name, "
                            "sweep_ref('a1') AS prefix, sweep_ref(?) AS id, sweep_ref('nope') AS nothing", [OLD])
    assert resolved == [{"latest": NEW, "name": NEW, "prefix": OLD, "id": OLD, "nothing": None}]
    by_id = _rounded(_query(path, "FROM sweep_leaderboard(?)", [NEW]))
    assert _rounded(_query(path, "FROM sweep_leaderboard('latest')")) == by_id
    assert _rounded(_query(path, "FROM sweep_leaderboard('c3')")) == by_id
    assert _query(path, "FROM sweep_leaderboard('nope')") == [] == _query(path, "FROM sweep_pairs('nope')")


def _rounded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with floats to 12 digits: DuckDB sums in parallel, in no fixed order, so the last bits vary."""
    return [{k: round(v, 12) if isinstance(v, float) else v for k, v in row.items()} for row in rows]


def _sweep_examples() -> list[tuple[str, str]]:
    section = DOC.read_text(encoding="utf-8").split("## Sweeps: the leaderboard in SQL", 1)[1]
    return re.findall(r"^### (.+?)$.*?^```sql\n(.*?)^```", section, re.MULTILINE | re.DOTALL)


def test_the_sweep_examples_of_the_sql_page_return_what_they_say(sweeps: tuple[Path, dict[str, Runs]]) -> None:
    path, written = sweeps
    board, _ = _expected(written[NEW])
    (_, won), (_, lost), (_, ahead) = _sweep_examples()
    rows = _query(path, won)
    assert [r["candidate"] for r in rows] == sorted((lab for lab, s in board if s == TONE),
                                                    key=lambda lab: board[lab, TONE]["rank"])
    assert rows[0]["candidate"] == BIG
    rows = _query(path, lost)
    assert [r["item_id"] for r in rows] == ["q04"] and rows[0]["gain"] < 0
    assert [r["candidate"] for r in _query(path, ahead)] == [BIG]


def test_the_duckdb_shell_runs_the_leaderboard_macro(sweeps: tuple[Path, dict[str, Runs]]) -> None:
    """The `duckdb` 1.5 binary of PyPI's duckdb-cli (a dev dependency), as docs/sql.md says."""
    cli = shutil.which("duckdb", path=str(Path(sys.executable).parent)) or shutil.which("duckdb")
    if cli is None:
        pytest.skip("no duckdb CLI binary installed (pip install duckdb-cli)")
    path, _ = sweeps
    proc = subprocess.run([cli, "-readonly", "-csv", str(path), "-c", "FROM sweep_leaderboard('latest')"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = list(csv.DictReader(io.StringIO(proc.stdout)))
    want = _query(path, "FROM sweep_leaderboard('latest')")
    assert [(r["candidate"], r["scorer_id"], r["rank"]) for r in got] == [
        (r["candidate"], r["scorer_id"], str(r["rank"])) for r in want]
    lows = [float(r["delta_low"]) if r["delta_low"] not in ("", "NULL") else float("nan") for r in got]
    assert lows == pytest.approx(
        [r["delta_low"] if r["delta_low"] is not None else float("nan") for r in want], nan_ok=True)
