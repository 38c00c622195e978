"""Fixtures for the store tests: a fresh DuckDB file per test and a small way to fill it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from evalduck.flows.store import ScoreRow, Store

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "evals.duckdb"


@pytest.fixture
def store(db_path: Path) -> Store:
    return Store(db_path)


@pytest.fixture
def add_run() -> object:
    """The `fill_run` helper, as a fixture (test modules here are not a package)."""
    return fill_run


def fill_run(
    store: Store,
    run_id: str,
    scores: dict[str, dict[str, float | str | None]],
    *,
    name: str | None = None,
    minutes: int = 0,
    dataset_hash: str = "hash-1",
    scorer_version: str = "1",
    judge_model: str | None = None,
    status: str = "completed",
    directions: dict[str, bool] | None = None,
) -> None:
    """A finished run. scores: scorer_id -> item_id -> a score, "error", "skipped" (None: no row); directions:
    scorer_id -> higher is better (run_scorers)."""
    store.start_run(run_id, name, "data.jsonl", dataset_hash, {"k": 1}, started_at=T0 + timedelta(minutes=minutes),
                    directions=directions)
    item_ids = sorted({item for per_item in scores.values() for item in per_item})
    store.write_items(run_id, [{"item_id": i, "input": f"question {i}", "output": f"answer {i}"} for i in item_ids])
    rows = list(_rows(run_id, scores, scorer_version, judge_model))
    store.write_scores(run_id, rows)
    store.finish_run(run_id, status)


def _rows(
    run_id: str, scores: dict[str, dict[str, float | str | None]], version: str, judge_model: str | None
) -> Iterable[ScoreRow]:
    for scorer_id, per_item in scores.items():
        for item, value in per_item.items():
            if value is None:
                continue
            if isinstance(value, str):
                yield ScoreRow(
                    run_id=run_id, item_id=item, scorer_id=scorer_id, scorer_version=version, status=value,  # type: ignore[arg-type]
                    error="boom" if value == "error" else None, judge_model=judge_model,
                )
            else:
                yield ScoreRow(
                    run_id=run_id, item_id=item, scorer_id=scorer_id, scorer_version=version, score=value,
                    reason=f"reason {item}", judge_model=judge_model,
                )
