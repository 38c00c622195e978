"""The results store on a DuckDB file: upserts with one row per cell (the last write wins), runs and their
references, the summary views, and read-only SQL."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from evalduck.flows.store import ScoreRow, Store, UnknownRunError


def _cell(run: str, item: str, scorer: str, score: float | None, status: str = "scored", **extra: object) -> ScoreRow:
    return ScoreRow(run_id=run, item_id=item, scorer_id=scorer, scorer_version="1", score=score, status=status, **extra)  # type: ignore[arg-type]


def test_rewrite_replaces_and_never_duplicates(store: Store) -> None:
    store.start_run("r1", "nightly", "d.jsonl", "h", {})
    first = [_cell("r1", f"i{i}", s, 0.1) for i in range(50) for s in ("a", "b")]
    assert store.write_scores("r1", first) == 100
    store.write_scores("r1", first)
    again = [_cell("r1", f"i{i}", "a", 0.9, reason="second") for i in range(25)]
    again.append(_cell("r1", "i0", "a", 0.5, reason="last in batch"))  # same key twice in one batch: last wins
    store.write_scores("r1", again)
    rows = store.sql(
        "SELECT item_id, scorer_id, count(*) OVER (PARTITION BY item_id, scorer_id) AS n, score, reason "
        "FROM scores WHERE run_id = ?", ["r1"]
    ).records()
    assert len(rows) == 100 and all(r["n"] == 1 for r in rows)
    by_key = {(r["item_id"], r["scorer_id"]): r for r in rows}
    assert by_key[("i0", "a")]["score"] == 0.5 and by_key[("i0", "a")]["reason"] == "last in batch"
    assert by_key[("i1", "a")]["score"] == 0.9 and by_key[("i30", "a")]["score"] == 0.1
    assert by_key[("i1", "b")]["score"] == 0.1


def test_items_upsert_and_json_columns(store: Store) -> None:
    store.start_run("r1", None, None, None, None)
    items = [{"item_id": "x", "input": [{"role": "user", "content": "hi"}], "groundTruth": "g", "metadata": {"k": 1}}]
    store.write_items("r1", items)
    store.write_items("r1", [{**items[0], "output": "o"}, {"input": "no id given"}])
    rows = store.sql("SELECT item_id, input, output, ground_truth, metadata FROM items ORDER BY item_id").rows
    assert len(rows) == 2
    assert rows[0][0].startswith("h:")
    assert rows[1][0] == "x" and json.loads(rows[1][1])[0]["content"] == "hi" and json.loads(rows[1][2]) == "o"
    assert json.loads(rows[1][3]) == "g" and json.loads(rows[1][4]) == {"k": 1}


def test_score_is_null_unless_scored() -> None:
    with pytest.raises(ValidationError, match="needs a score"):
        _cell("r", "i", "s", None)
    with pytest.raises(ValidationError, match="must have score None"):
        _cell("r", "i", "s", 0.5, status="error")


def test_rows_of_another_run_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="has run_id 'other'"):
        store.write_scores("r1", [_cell("other", "i", "s", 1.0)])


def test_completed_cells_are_scored_or_skipped(store: Store, add_run: Any) -> None:
    add_run(store, "r1", {"a": {"i1": 0.5, "i2": "error", "i3": "skipped"}, "b": {"i1": 1.0}})
    assert store.completed_cells("r1") == {("i1", "a"), ("i3", "a"), ("i1", "b")}
    assert store.completed_cells("nope") == set()


def test_resume_marks_running_and_keeps_start(store: Store, add_run: Any) -> None:
    add_run(store, "r1", {"a": {"i1": 0.5}}, name="n")
    started = store.list_runs()[0].started_at
    store.start_run("r1", "n", "data.jsonl", "hash-1", {"k": 2}, flow_run_id="fr-2")
    run = store.list_runs()[0]
    assert run.status == "running" and run.finished_at is None and run.started_at == started
    assert run.flow_run_id == "fr-2" and run.config == {"k": 2}


def test_run_references(store: Store, add_run: Any) -> None:
    with pytest.raises(UnknownRunError, match="no 'latest' run"):
        store.resolve_run("latest")
    add_run(store, "run-aaa-1", {"a": {"i": 0.1}}, name="nightly", minutes=0)
    add_run(store, "run-bbb-2", {"a": {"i": 0.2}}, name="adhoc", minutes=1)
    add_run(store, "run-ccc-3", {"a": {"i": 0.3}}, name="nightly", minutes=2)
    assert store.resolve_run("latest") == "run-ccc-3"
    assert store.resolve_run("previous") == "run-bbb-2"
    assert store.resolve_run("nightly") == "run-ccc-3"
    assert store.resolve_run("adhoc") == "run-bbb-2"
    assert store.resolve_run("run-aaa-1") == "run-aaa-1"
    assert store.resolve_run("run-a") == "run-aaa-1"  # a unique id prefix
    with pytest.raises(UnknownRunError, match="no run with id or name 'run-'"):
        store.resolve_run("run-")  # ambiguous prefix
    with pytest.raises(UnknownRunError, match=r"'weekly'.*Recent runs: run-ccc-3 \(nightly\), run-bbb-2 \(adhoc\)"):
        store.resolve_run("weekly")
    assert [r.run_id for r in store.list_runs(2)] == ["run-ccc-3", "run-bbb-2"]


def test_finish_unknown_run(store: Store) -> None:
    with pytest.raises(UnknownRunError):
        store.finish_run("ghost", "completed")
    with pytest.raises(ValueError, match="must be one of"):
        store.finish_run("ghost", "done")


def test_summary_view_and_worst_items(store: Store, add_run: Any) -> None:
    add_run(store, "r1", {"a": {"i1": 0.2, "i2": 0.6, "i3": "error", "i4": "skipped"}})
    summary = store.run_summary("latest")
    (row,) = summary.scorers
    assert (row["n_scored"], row["n_errors"], row["n_skipped"], row["n_cells"]) == (2, 1, 1, 4)
    assert row["mean_score"] == pytest.approx(0.4) and row["stddev_score"] == pytest.approx(0.28284271247)
    worst = store.worst_items("r1", limit=2)
    assert [w["item_id"] for w in worst] == ["i3", "i1"]
    assert "i4" not in {w["item_id"] for w in store.worst_items("r1", limit=10)}  # skipped is no finding


def test_sql_is_read_only_unless_asked(store: Store) -> None:
    with pytest.raises(duckdb.Error):
        store.sql("DELETE FROM runs")
    store.sql("CREATE VIEW mine AS SELECT 1 AS x", write=True)
    assert store.sql("SELECT x FROM mine").rows == [(1,)]


def test_env_var_names_the_default_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALDUCK_DB", str(tmp_path / "env.duckdb"))
    assert Store().path == (tmp_path / "env.duckdb").resolve()
    monkeypatch.delenv("EVALDUCK_DB")
    monkeypatch.chdir(tmp_path)
    assert Store().path == (tmp_path / "evals.duckdb").resolve()


_key = st.tuples(st.sampled_from(["i1", "i2", "i3", "i4"]), st.sampled_from(["a", "b"]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(st.tuples(_key, st.floats(0, 1)), min_size=1, max_size=6), min_size=1, max_size=4))
def test_any_sequence_of_writes_leaves_one_row_per_cell_last_write_wins(
    tmp_path: Path, batches: list[list[tuple[tuple[str, str], float]]]
) -> None:
    store = Store(tmp_path / f"prop-{uuid.uuid4().hex}.duckdb")
    expected: dict[tuple[str, str], float] = {}
    for batch in batches:
        store.write_scores("r", [_cell("r", item, scorer, score) for (item, scorer), score in batch])
        expected.update({key: score for key, score in batch})
    rows = store.sql("SELECT item_id, scorer_id, score FROM scores").rows
    assert len(rows) == len(expected)
    assert {(i, s): v for i, s, v in rows} == expected


def test_start_run_writes_its_items_and_a_batch_can_end_the_run(store: Store) -> None:
    store.start_run("r1", "n", "d.jsonl", "h", {}, items=[{"item_id": "a", "input": "q1"}, {"id": "b", "input": "q2"}])
    assert store.sql("SELECT item_id, input FROM items ORDER BY item_id").rows == [("a", '"q1"'), ("b", '"q2"')]
    with pytest.raises(ValueError, match="run status must be one of"):
        store.write_batch("r1", scores=[_cell("r1", "a", "s", 0.5)], status="done")
    assert store.sql("SELECT count(*) FROM scores").rows == [(0,)]  # the batch did not land either
    store.write_batch("r1", scores=[_cell("r1", "a", "s", 0.5)], status="completed")
    assert store.sql("SELECT status, finished_at IS NOT NULL, (SELECT count(*) FROM scores) FROM runs").rows == [
        ("completed", True, 1)]
    with pytest.raises(UnknownRunError):
        store.write_batch("ghost", status="completed")
