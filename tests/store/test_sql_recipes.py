"""Every recipe of docs/sql.md, executed from the page's own text, on a plain DuckDB connection."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from evalduck.flows.store import ScoreRow, Store

DOC = Path(__file__).resolve().parents[2] / "docs" / "sql.md"
RECIPE = re.compile(r"^### (\d+)\. (.+?)$.*?^```sql\n(.*?)^```", re.MULTILINE | re.DOTALL)
T0 = datetime(2026, 5, 1, tzinfo=timezone.utc)


def _recipes() -> list[tuple[int, str, str]]:
    return [(int(n), title, sql) for n, title, sql in RECIPE.findall(DOC.read_text(encoding="utf-8"))]


def _cells(run: str, shift: float, errors: set[int]) -> list[ScoreRow]:
    rows: list[ScoreRow] = []
    for i in range(12):
        item = f"item-{i:02d}"
        judge = dict(judge_model="openai/gpt-4o-mini", prompt_tokens=300 + i, completion_tokens=40, cost=0.0002)
        if i in errors:
            rows.append(ScoreRow(run_id=run, item_id=item, scorer_id="answer-relevancy-scorer", scorer_version="1",
                                 status="error", error="JudgeTransientError: 429 Too Many Requests", latency_s=2.0,
                                 **judge))
        else:
            rows.append(ScoreRow(run_id=run, item_id=item, scorer_id="answer-relevancy-scorer", scorer_version="1",
                                 score=round(min(1.0, (i % 7) / 7 + shift), 2), reason="relevant", latency_s=1.0 + i / 10,
                                 **judge))
        rows.append(ScoreRow(run_id=run, item_id=item, scorer_id="hallucination-scorer", scorer_version="1",
                             score=round(min(1.0, (i % 5) / 5 + 0.2 - shift), 2)))  # lower is better: it rises
        if i % 4 == 0:
            rows.append(ScoreRow(run_id=run, item_id=item, scorer_id="faithfulness-scorer", scorer_version="1",
                                 status="skipped", reason="faithfulness-scorer needs `context`: give it per row"))
        ratio = ((i * 37) % 100) / 100
        rows.append(ScoreRow(run_id=run, item_id=item, scorer_id="textual-difference-scorer", scorer_version="1",
                             score=ratio * 0.9, analyze_step_result={"ratio": ratio, "confidence": 0.9, "changes": i},
                             latency_s=0.001))
    return rows


@pytest.fixture(scope="module")
def recipe_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db_path = tmp_path_factory.mktemp("recipes") / "evals.duckdb"
    store = Store(db_path)
    runs = [("adhoc-0", "adhoc", -5, 0.0, {1}, "running"), ("nightly-1", "nightly", 0, 0.2, {3}, "completed"),
            ("nightly-2", "nightly", 5, 0.0, {3, 4, 5}, "completed")]
    for run_id, name, minutes, shift, errors, status in runs:
        store.start_run(run_id, name, "support.jsonl", "h1", {}, started_at=T0 + timedelta(minutes=minutes),
                        directions={"answer-relevancy-scorer": True, "textual-difference-scorer": True,
                                    "hallucination-scorer": False, "faithfulness-scorer": True})
        store.write_batch(run_id, items=[{"item_id": f"item-{i:02d}", "input": f"question {i}",
                                          **({"context": [f"passage {i}"]} if i % 4 else {"expectedTool": "search"})}
                                         for i in range(12)],
                          scores=_cells(run_id, shift, errors))
        if status != "running":
            store.finish_run(run_id, status)
    return db_path


def test_the_page_has_at_least_ten_recipes() -> None:
    recipes = _recipes()
    assert len(recipes) >= 10
    assert [n for n, _, _ in recipes] == list(range(1, len(recipes) + 1))


@pytest.mark.parametrize(("number", "title", "query"), _recipes(), ids=lambda v: str(v)[:30])
def test_recipe_runs_and_returns_rows(recipe_db: Path, number: int, title: str, query: str) -> None:
    con = duckdb.connect(str(recipe_db), read_only=True)
    try:
        cursor = con.execute(query)
        columns = [d[0] for d in cursor.description]
        rows = [dict(zip(columns, r, strict=True)) for r in cursor.fetchall()]
    finally:
        con.close()
    assert rows, f"recipe {number} ({title}) returned no rows"
    if number == 1:
        assert rows == [
            {k: r[k] for k in columns} for r in Store(recipe_db).compare("nightly-1", "nightly-2")
        ]
    elif number == 3:
        assert all(r["delta"] < 0 if r["higher_is_better"] else r["delta"] > 0 for r in rows)
        assert {r["higher_is_better"] for r in rows} == {True, False}
    elif number == 6:
        (row,) = rows
        assert (row["cells"], row["errors"]) == (36, 5)
    elif number == 13:
        assert rows == [{"scorer_id": "faithfulness-scorer", "reason": "faithfulness-scorer needs `context`: give "
                         "it per row", "cells": 3}]
    elif number == 12:
        assert [r["run_id"] for r in rows] == ["adhoc-0"]


def test_plain_duckdb_cli_reads_the_file_and_its_macros(recipe_db: Path) -> None:
    """The `duckdb` binary of PyPI's duckdb-cli (a dev dependency) runs the first recipe."""
    cli = shutil.which("duckdb", path=str(Path(sys.executable).parent)) or shutil.which("duckdb")
    if cli is None:
        pytest.skip("no duckdb CLI binary installed (pip install duckdb-cli)")
    (_, _, query) = _recipes()[0]
    proc = subprocess.run([cli, "-readonly", "-csv", str(recipe_db), "-c", query],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = list(csv.DictReader(io.StringIO(proc.stdout)))
    expected = Store(recipe_db).compare("previous", "latest")
    assert [r["scorer_id"] for r in got] == [r["scorer_id"] for r in expected]
    for row, want in zip(got, expected, strict=True):
        assert float(row["mean_delta"]) == pytest.approx(want["mean_delta"])
        assert float(row["ci_high"]) == pytest.approx(want["ci_high"])
