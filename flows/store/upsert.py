"""Rows as the store writes them: item and score tuples in column order, the upsert of a batch (staged
with DuckDB's appender, the replaced keys deleted, inserted: one transaction, the caller's), and the
replacement of a run's rows of a table (run_scorers) staged the same way."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import duckdb

from evalduck.flows.store.ids import item_id as compute_item_id
from evalduck.flows.store.models import JSON_SCORE_COLUMNS, SAMPLE_COLUMNS, SCORE_COLUMNS, SampleRow, ScoreRow

__all__ = ("ITEM_COLUMNS", "RUN_SCORER_COLUMNS", "item_tuples", "score_tuples", "sample_tuples", "upsert", "replace_run_rows", "to_json",
           "utcnow")

ITEM_COLUMNS = ("run_id", "item_id", "input", "output", "ground_truth", "request_context", "metadata", "context",
                "expected_tool", "expected_tool_order", "target_latency_s", "created_at")
_ITEM_FIELDS = ITEM_COLUMNS[2:-1]  # what an item gives
_ITEM_PLAIN_COLUMNS = frozenset({"expected_tool", "target_latency_s"})  # VARCHAR, DOUBLE; the other fields are JSON
_ITEM_ALIASES = {"ground_truth": ("ground_truth", "groundTruth"), "request_context": ("request_context", "requestContext"),
                 "expected_tool": ("expected_tool", "expectedTool"),
                 "expected_tool_order": ("expected_tool_order", "expectedToolOrder")}
RUN_SCORER_COLUMNS = ("run_id", "scorer_id", "higher_is_better")


_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode


def to_json(value: Any) -> str | None:
    """A JSON column's text (SQL NULL for None, not the JSON text null)."""
    return None if value is None else _encode(value)


def utcnow() -> datetime:
    """The write time stored with rows: timezone-aware UTC."""
    return datetime.now(timezone.utc)


def item_tuples(run_id: str, items: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """The ``items`` rows to upsert, one per item id (the last wins), the id computed where none is given."""
    now = utcnow()
    rows: dict[str, tuple[Any, ...]] = {}
    for item in items:
        iid = item.get("item_id")
        iid = compute_item_id(item) if iid is None else str(iid)
        values = ((col, _first(item, _ITEM_ALIASES.get(col, (col,)))) for col in _ITEM_FIELDS)
        rows[iid] = (run_id, iid, *(v if col in _ITEM_PLAIN_COLUMNS else to_json(v) for col, v in values), now)
    return list(rows.values())


def score_tuples(run_id: str, rows: Sequence[ScoreRow | Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """The ``scores`` rows to upsert, validated, one per (item, scorer) cell (the last wins); ValueError for
    a row of another run."""
    cells: dict[tuple[str, str], tuple[Any, ...]] = {}
    for raw in rows:
        row = raw if isinstance(raw, ScoreRow) else ScoreRow.model_validate({"run_id": run_id, **raw})
        if row.run_id != run_id:
            raise ValueError(f"write_scores({run_id!r}): row for item {row.item_id!r} has run_id {row.run_id!r}")
        fields = row.__dict__
        cells[(row.item_id, row.scorer_id)] = tuple(
            to_json(fields[col]) if col in JSON_SCORE_COLUMNS else fields[col] for col in SCORE_COLUMNS
        )
    return list(cells.values())


def sample_tuples(run_id: str, rows: Sequence[SampleRow]) -> list[tuple[Any, ...]]:
    """The ``score_samples`` rows to upsert, one per (item, scorer, sample) (the last wins)."""
    samples: dict[tuple[str, str, int], tuple[Any, ...]] = {}
    for row in rows:
        if row.run_id != run_id:
            raise ValueError(f"write_batch({run_id!r}): sample of item {row.item_id!r} has run_id {row.run_id!r}")
        fields = row.__dict__
        samples[(row.item_id, row.scorer_id, row.sample)] = tuple(
            to_json(fields[col]) if col in JSON_SCORE_COLUMNS else fields[col] for col in SAMPLE_COLUMNS)
    return list(samples.values())


def upsert(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[str],
    keys: Sequence[str],
    run_id: str,
    rows: list[tuple[Any, ...]],
) -> None:
    """Inside the caller's transaction: stage the rows, delete the keys they replace, insert."""
    if not rows:
        return
    cols = ", ".join(columns)
    match = " AND ".join(f"t.{key} = s.{key}" for key in keys)
    with _staged(con, table, columns, rows) as stage:
        con.execute(f"DELETE FROM {table} AS t USING {stage} AS s WHERE t.run_id = ? AND {match}", [run_id])
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {stage}")


def replace_run_rows(
    con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], run_id: str, rows: list[tuple[Any, ...]]
) -> None:
    """Inside the caller's transaction: the run's rows of `table` become `rows` (none when empty)."""
    con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
    if not rows:
        return
    cols = ", ".join(columns)
    with _staged(con, table, columns, rows) as stage:
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {stage}")


@contextmanager
def _staged(con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str],
            rows: list[tuple[Any, ...]]) -> Iterator[str]:
    """The rows in a temporary table shaped like `table`'s columns (its name), dropped after the block."""
    stage = f"_evalduck_stage_{table}"
    con.execute(f"CREATE OR REPLACE TEMP TABLE {stage} AS SELECT {', '.join(columns)} FROM {table} LIMIT 0")
    _stage_rows(con, stage, columns, rows)
    yield stage
    con.execute(f"DROP TABLE {stage}")


def _stage_rows(con: duckdb.DuckDBPyConnection, stage: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    """DuckDB 2.0's appender; DuckDB 1.5 (the shared store's, docs/scale-out.md) has none in Python, and its
    list parameters and executemany cost seconds per thousand rows, so there the rows go through a
    newline-delimited JSON file read by DuckDB's own reader, no slower than 2.0's appender at the writer's
    batch size (docs/benchmarks-history.md, 'Shared store')."""
    if hasattr(con, "appender"):
        appender = con.appender(stage)
        appender.append_rows(rows)
        appender.flush()
        return
    fd, name = tempfile.mkstemp(prefix="evalduck-stage-", suffix=".ndjson")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(_encode(dict(zip(columns, row, strict=True))))
                out.write("\n")
        types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {stage})").fetchall())
        spec = ", ".join(f"'{col}': '{'VARCHAR' if types[col] == 'JSON' else types[col]}'" for col in columns)
        con.execute(
            f"INSERT INTO {stage} BY NAME SELECT * FROM read_json(?, columns = {{{spec}}}, format = 'newline_delimited')",
            [name],
        )
    finally:
        os.unlink(name)


def _first(item: Mapping[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if name in item:
            return item[name]
    return None


