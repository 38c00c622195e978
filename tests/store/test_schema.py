"""Schema creation, migration from the previous version, and refusal of newer or foreign files."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from evalduck.flows.store import SCHEMA_VERSION, SchemaVersionError, Store, StoreError
from evalduck.flows.store.schema import migrate

# The version 1 schema as it was released, written out here so the test does not depend on the code.
V1_FILE = """
CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
                             evalduck_version VARCHAR);
CREATE TABLE runs (run_id VARCHAR NOT NULL, name VARCHAR, dataset VARCHAR, status VARCHAR NOT NULL,
                   started_at TIMESTAMPTZ NOT NULL, finished_at TIMESTAMPTZ, config JSON);
CREATE TABLE items (run_id VARCHAR NOT NULL, item_id VARCHAR NOT NULL, input JSON, output JSON,
                    ground_truth JSON, metadata JSON);
CREATE TABLE scores (run_id VARCHAR NOT NULL, item_id VARCHAR NOT NULL, scorer_id VARCHAR NOT NULL,
                     scorer_version VARCHAR NOT NULL, score DOUBLE, status VARCHAR NOT NULL, reason VARCHAR,
                     error VARCHAR, preprocess_step_result JSON, analyze_step_result JSON,
                     created_at TIMESTAMPTZ NOT NULL);
INSERT INTO schema_version (version, evalduck_version) VALUES (1, '0.0.1');
INSERT INTO runs VALUES ('old-a', 'nightly', 'd.jsonl', 'completed', TIMESTAMPTZ '2025-01-01 00:00:00+00', NULL, '{}'),
                        ('old-b', 'nightly', 'd.jsonl', 'completed', TIMESTAMPTZ '2025-01-02 00:00:00+00', NULL, '{}');
INSERT INTO items VALUES ('old-a', 'i1', '"q1"', '"a1"', NULL, NULL), ('old-b', 'i1', '"q1"', '"a1"', NULL, NULL);
INSERT INTO scores VALUES
  ('old-a', 'i1', 'tone-scorer', '1', 0.25, 'scored', 'r', NULL, NULL, '{"x": 1}', now()),
  ('old-a', 'i2', 'tone-scorer', '1', 0.50, 'scored', 'r', NULL, NULL, NULL, now()),
  ('old-b', 'i1', 'tone-scorer', '1', 0.75, 'scored', 'r', NULL, NULL, NULL, now()),
  ('old-b', 'i2', 'tone-scorer', '1', 0.75, 'scored', 'r', NULL, NULL, NULL, now());
"""


def _make_file(path: Path, sql: str) -> None:
    con = duckdb.connect(str(path))
    con.execute(sql)
    con.close()


def test_new_file_has_the_current_schema(db_path: Path) -> None:
    store = Store(db_path)
    assert store.migrated_from == 0
    assert store.sql("SELECT max(version) FROM schema_version").rows == [(SCHEMA_VERSION,)]
    tables = {r[0] for r in store.sql("SELECT table_name FROM duckdb_tables()").rows}
    assert {"runs", "items", "scores", "schema_version", "t_quantile_975"} <= tables
    assert Store(db_path).migrated_from == SCHEMA_VERSION  # opening again changes nothing


def test_version_1_file_is_upgraded_in_place(db_path: Path) -> None:
    _make_file(db_path, V1_FILE)
    store = Store(db_path)
    assert store.migrated_from == 1
    assert store.sql("SELECT version FROM schema_version ORDER BY version").rows == [(v,) for v in range(1, SCHEMA_VERSION + 1)]
    old = store.sql("SELECT item_id, score, analyze_step_result, judge_model, cost FROM scores "
                    "WHERE run_id = 'old-a' ORDER BY item_id").rows
    assert old == [("i1", 0.25, '{"x": 1}', None, None), ("i2", 0.5, None, None, None)]
    (row,) = store.compare("previous", "latest")
    assert row["mean_delta"] == pytest.approx(0.375) and row["n_paired"] == 2
    # The upgraded file takes new writes with the new columns.
    store.start_run("new", "nightly", "d.jsonl", "h", {"a": 1}, flow_run_id="f")
    store.write_scores("new", [{"item_id": "i1", "scorer_id": "tone-scorer", "scorer_version": "1", "score": 1.0,
                                 "judge_model": "m", "cost": 0.5}])
    assert store.sql("SELECT judge_model, cost FROM scores WHERE run_id = 'new'").rows == [("m", 0.5)]
    assert store.resolve_run("nightly") == "new"


# A run left `running` by a killed process, in a file at version 2 (made by the migrations up to 2).
V2_RUN = """
INSERT INTO runs (run_id, name, dataset, status, started_at, config, dataset_hash, evalduck_version)
VALUES ('old-c', 'nightly', 'd.jsonl', 'running', TIMESTAMPTZ '2025-01-03 00:00:00+00', '{}', 'h', '0.1.0');
"""


def _old_file(db_path: Path, version: int, sql: str) -> Store:
    """A file made by the migrations up to ``version``, with ``sql`` run in it, then opened by this evalduck."""
    con = duckdb.connect(str(db_path))
    migrate(con, str(db_path), "0.1.0", target=version)
    con.execute(sql)
    con.close()
    return Store(db_path)


def test_version_2_file_gains_the_writer_columns_and_keeps_its_runs(db_path: Path) -> None:
    store = _old_file(db_path, 2, V2_RUN)
    assert store.migrated_from == 2
    assert store.sql("SELECT version FROM schema_version ORDER BY version").rows == [(v,) for v in range(1, SCHEMA_VERSION + 1)]
    # A run from before v3 has no recorded writer: nobody can tell whether it still runs, so it is left as is.
    assert store.interrupted == []
    assert store.run_record("old-c").status == "running"
    store.start_run("new", "nightly", "d.jsonl", "h", {})
    assert store.sql("SELECT writer_pid, writer_host IS NOT NULL FROM runs WHERE run_id = 'new'").rows == [
        (os.getpid(), True)
    ]
    assert Store(db_path).interrupted == []  # this process, the writer of "new", is alive
    # v4's item fields are there, empty for the old items.
    assert store.sql("SELECT count(*) FROM items WHERE context IS NOT NULL OR expected_tool IS NOT NULL").rows == [(0,)]


# A version 3 file with two runs of a seed scorer: v4 adds the item fields and fills run_scorers from the cells
# (every scorer before v4 was higher-is-better), so old runs compare and gate as before.
V3_RUNS = """
INSERT INTO runs (run_id, name, dataset, status, started_at, config) VALUES
    ('a', 'n', 'd.jsonl', 'completed', TIMESTAMPTZ '2025-01-01 00:00:00+00', '{}'),
    ('b', 'n', 'd.jsonl', 'completed', TIMESTAMPTZ '2025-01-02 00:00:00+00', '{}');
INSERT INTO items (run_id, item_id, input) VALUES ('a', 'i1', '"q1"'), ('a', 'i2', '"q2"'), ('b', 'i1', '"q1"'),
    ('b', 'i2', '"q2"');
INSERT INTO scores (run_id, item_id, scorer_id, scorer_version, score, status, created_at) VALUES
    ('a', 'i1', 'tone-scorer', '1', 0.5, 'scored', now()), ('a', 'i2', 'tone-scorer', '1', 0.6, 'scored', now()),
    ('b', 'i1', 'tone-scorer', '1', 0.7, 'scored', now()), ('b', 'i2', 'tone-scorer', '1', 0.9, 'scored', now());
"""


def test_version_3_file_gains_the_item_fields_and_the_scorer_directions(db_path: Path) -> None:
    store = _old_file(db_path, 3, V3_RUNS)
    assert store.migrated_from == 3
    assert store.sql("SELECT max(version) FROM schema_version").rows == [(SCHEMA_VERSION,)]
    assert store.sql("SELECT run_id, scorer_id, higher_is_better FROM run_scorers ORDER BY run_id").rows == [
        ("a", "tone-scorer", True), ("b", "tone-scorer", True)]
    (row,) = store.compare("a", "b")
    assert row["higher_is_better"] is True and row["n_improved"] == 2 and row["warning"] is None
    # New items carry the v4 fields; a new run records its scorers' directions.
    store.start_run("c", "n", "d.jsonl", "h", {}, directions={"tone-scorer": True, "bias-scorer": False},
                    items=[{"item_id": "i1", "input": "q1", "context": ["p1", "p2"], "expectedTool": "search",
                            "expected_tool_order": ["search", "answer"]}])
    assert store.sql("SELECT context, expected_tool, expected_tool_order FROM items WHERE run_id = 'c'").rows == [
        ('["p1", "p2"]', "search", '["search", "answer"]')]
    assert store.sql("SELECT scorer_id, higher_is_better FROM run_scorers WHERE run_id = 'c' ORDER BY 1").rows == [
        ("bias-scorer", False), ("tone-scorer", True)]


def test_version_4_file_gains_repeated_judging_and_its_cells_read_as_judged_once(db_path: Path) -> None:
    store = _old_file(db_path, 4, V3_RUNS + "INSERT INTO run_scorers VALUES ('a', 'tone-scorer', true), "
                                            "('b', 'tone-scorer', true);")
    assert store.migrated_from == 4
    assert store.sql("SELECT count(*), count(samples), count(score_sd) FROM scores").rows == [(4, 0, 0)]
    summary = store.run_summary("b")
    assert summary.samples == {} and summary.scorers[0]["mean_score"] == pytest.approx(0.8)
    (row,) = store.compare("a", "b")
    assert row["n_paired"] == 2 and row["mean_delta"] == pytest.approx(0.25)
    # A new run's cell judged three times: the aggregate in `scores`, each sample in `score_samples`.
    from evalduck.flows.store import SampleRow, ScoreRow

    store.start_run("c", "n", "d.jsonl", "h", {})
    cell = ScoreRow(run_id="c", item_id="i1", scorer_id="answer-relevancy-scorer", scorer_version="1", score=0.5,
                    samples=3, score_sd=0.5)
    samples = [SampleRow(run_id="c", item_id="i1", scorer_id="answer-relevancy-scorer", sample=i, status="scored",
                         score=s) for i, s in enumerate((1.0, 0.0, 0.5))]
    store.write_batch("c", scores=[cell], samples=samples)
    store.write_batch("c", samples=samples[:1])  # written again (a resume): still one row per sample
    assert store.sql("SELECT sample, score FROM score_samples ORDER BY sample").rows == [(0, 1.0), (1, 0.0), (2, 0.5)]
    assert store.run_summary("c").samples == {"answer-relevancy-scorer": [[1.0, 0.0, 0.5]]}
    assert store.sql("SELECT samples, score_sd FROM scores WHERE run_id = 'c'").rows == [(3, 0.5)]


def test_newer_schema_is_refused_and_left_untouched(db_path: Path) -> None:
    Store(db_path)
    con = duckdb.connect(str(db_path))
    con.execute("INSERT INTO schema_version (version, evalduck_version) VALUES (99, '9.0')")
    con.close()
    with pytest.raises(SchemaVersionError, match=rf"schema version 99, newer than the {SCHEMA_VERSION} this evalduck"):
        Store(db_path)
    con = duckdb.connect(str(db_path), read_only=True)
    assert con.execute("SELECT max(version) FROM schema_version").fetchone() == (99,)
    con.close()


def test_foreign_duckdb_file_is_refused(db_path: Path) -> None:
    _make_file(db_path, "CREATE TABLE sales (x INTEGER)")
    with pytest.raises(StoreError, match=r"has tables \(sales\) but no evalduck schema_version"):
        Store(db_path)


def test_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "nope" / "evals.duckdb")


def test_stale_stored_sql_is_refreshed_on_open(db_path: Path) -> None:
    Store(db_path)
    con = duckdb.connect(str(db_path))
    con.execute("CREATE OR REPLACE MACRO latest_run() AS 'stale'")
    con.execute("COMMENT ON TABLE schema_version IS 'macros:old'")
    con.close()
    store = Store(db_path)
    assert store.sql("SELECT latest_run()").rows == [(None,)]  # the real macro again (no runs yet)
