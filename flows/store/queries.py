"""The store's read queries, as plain functions over one open connection: run references, a run's record
and summary, its worst items and skipped cells, comparisons of two runs.

Apart from `Store` (store.py), which opens the connection, so that the queries read as SQL and nothing
else; `where` is what a message names (the file, or the lake's masked URL).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import duckdb
from pydantic import BaseModel

from evalduck.flows.store.errors import UnknownRunError
from evalduck.flows.store.models import RunRecord

__all__ = ("RunSummary", "resolve", "completed_cells", "last_completed", "run_record", "run_summary", "worst_items",
           "skipped_reasons", "compare", "item_deltas", "records", "decode_config", "json_value", "samples_by_scorer",
           "SAMPLES_SQL")


class RunSummary(BaseModel):
    """A run with one summary row per scorer (the `run_scorer_summary` view)."""

    run: RunRecord
    scorers: list[dict[str, Any]]
    # Per scorer judged several times a cell (judge_samples), each cell's scored samples' scores.
    samples: dict[str, list[list[float]]] = {}
    # Per scorer with cells labelled by a person (`evalduck label`): (the cell's score, the label) of each.
    labelled: dict[str, list[tuple[float, float]]] = {}


def records(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """A cursor's rows as dicts by column name."""
    columns = [d[0] for d in cursor.description or ()]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def json_value(value: Any) -> Any:
    """A JSON column's value as stored: DuckDB hands JSON back as text, parsed here (text that is not JSON is
    returned as it is)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def samples_by_scorer(rows: Iterable[tuple[str, list[float]]]) -> dict[str, list[list[float]]]:
    """SAMPLES_SQL's rows (scorer id, one cell's scored samples) grouped by scorer, cells in item order."""
    samples: dict[str, list[list[float]]] = {}
    for scorer_id, scores in rows:
        samples.setdefault(scorer_id, []).append(list(scores))
    return samples


def decode_config(record: dict[str, Any]) -> dict[str, Any]:
    """A `runs` row with its `config` JSON text parsed."""
    config = record.get("config")
    if isinstance(config, str):
        record = {**record, "config": json.loads(config)}
    return record


def resolve(con: duckdb.DuckDBPyConnection, ref: str, where: object) -> str:
    """A run id from `latest`, `previous`, an id, a name (its newest run) or a unique id prefix."""
    ref = ref.strip()
    if ref in ("latest", "previous"):
        offset = 0 if ref == "latest" else 1
        row = con.execute(
            "SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1 OFFSET ?", [offset]
        ).fetchone()
        if row is None:
            (count,) = con.execute("SELECT count(*) FROM runs").fetchone() or (0,)
            raise UnknownRunError(f"{where}: no {ref!r} run: the database holds {count} run(s)")
        return str(row[0])
    row = con.execute("SELECT run_id FROM runs WHERE run_id = ?", [ref]).fetchone()
    if row is not None:
        return str(row[0])
    row = con.execute(
        "SELECT run_id FROM runs WHERE name = ? ORDER BY started_at DESC, run_id DESC LIMIT 1", [ref]
    ).fetchone()
    if row is not None:
        return str(row[0])
    prefixed = con.execute("SELECT run_id FROM runs WHERE starts_with(run_id, ?) LIMIT 2", [ref]).fetchall()
    if len(prefixed) == 1 and len(ref) >= 4:
        return str(prefixed[0][0])
    recent = [f"{rid} ({name})" if name else rid for rid, name in con.execute(
        "SELECT run_id, name FROM runs ORDER BY started_at DESC LIMIT 5"
    ).fetchall()]
    hint = f" Recent runs: {', '.join(recent)}." if recent else " The database holds no runs yet."
    raise UnknownRunError(f"{where}: no run with id or name {ref!r} (also accepted: latest, previous).{hint}")


def completed_cells(con: duckdb.DuckDBPyConnection, run_id: str) -> set[tuple[str, str]]:
    """(item_id, scorer_id) of the run's `scored` or `skipped` cells."""
    rows = con.execute(
        "SELECT item_id, scorer_id FROM scores WHERE run_id = ? AND status IN ('scored', 'skipped')", [run_id]
    ).fetchall()
    return {(item, scorer) for item, scorer in rows}


def last_completed(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """The newest `completed` run of this name, if any."""
    row = con.execute("SELECT run_id FROM runs WHERE name = ? AND status = 'completed' "
                      "ORDER BY started_at DESC, run_id DESC LIMIT 1", [name]).fetchone()
    return str(row[0]) if row is not None else None


def run_record(con: duckdb.DuckDBPyConnection, run_id: str) -> RunRecord:
    """One run (by id) with its counts (the `run_overview` view)."""
    return RunRecord.model_validate(
        decode_config(records(con.execute("SELECT * FROM run_overview WHERE run_id = ?", [run_id]))[0])
    )


def run_summary(con: duckdb.DuckDBPyConnection, run_id: str) -> RunSummary:
    """The run (by id) and its per-scorer summary rows."""
    scorers = records(con.execute("SELECT * FROM run_scorer_summary WHERE run_id = ? ORDER BY scorer_id", [run_id]))
    samples = samples_by_scorer(con.execute(SAMPLES_SQL, {"run": run_id}).fetchall())
    labelled: dict[str, list[tuple[float, float]]] = {}
    for scorer_id, score, value in con.execute(_LABELLED, [run_id]).fetchall():
        labelled.setdefault(scorer_id, []).append((score, value))
    return RunSummary(run=run_record(con, run_id), scorers=scorers, samples=samples, labelled=labelled)


_LABELLED = """
    SELECT s.scorer_id, s.score, l.value FROM labels AS l
    JOIN scores AS s ON s.run_id = l.run_id AND s.item_id = l.item_id AND s.scorer_id = l.scorer_id
    WHERE l.run_id = ? AND s.status = 'scored' ORDER BY s.scorer_id, s.item_id
"""


# Each cell's scored samples (repeated judging), per scorer: what the judge's noise is measured on.
SAMPLES_SQL = """
    SELECT scorer_id, list(score ORDER BY sample) AS scores FROM score_samples
    WHERE run_id = $run AND status = 'scored' GROUP BY scorer_id, item_id ORDER BY scorer_id, item_id
"""


_WORST_ITEMS = """
    WITH cells AS (
        SELECT s.scorer_id, s.item_id, s.status, s.score, coalesce(s.error, s.reason) AS detail,
               CASE WHEN d.higher_is_better IS FALSE THEN -s.score ELSE s.score END AS goodness,
               d.higher_is_better,
               json_array_length(i.context) AS n_passages, i.expected_tool,
               CAST(i.expected_tool_order AS VARCHAR[]) AS expected_tool_order
        FROM scores AS s
        LEFT JOIN run_scorers AS d ON d.run_id = s.run_id AND d.scorer_id = s.scorer_id
        LEFT JOIN items AS i ON i.run_id = s.run_id AND i.item_id = s.item_id
        WHERE s.run_id = ? AND s.status <> 'skipped')
    SELECT scorer_id, item_id, status, score, detail, higher_is_better, n_passages, expected_tool,
           expected_tool_order
    FROM cells
    QUALIFY row_number() OVER (
        PARTITION BY scorer_id ORDER BY (status = 'error') DESC, goodness ASC NULLS LAST, item_id) <= ?
    ORDER BY scorer_id, (status = 'error') DESC, goodness ASC NULLS LAST, item_id
"""


def worst_items(con: duckdb.DuckDBPyConnection, run_id: str, limit: int) -> list[dict[str, Any]]:
    """Per scorer, its errors, then its `limit` worst-scored cells of the run (see Store.worst_items)."""
    return records(con.execute(_WORST_ITEMS, [run_id, limit]))


def skipped_reasons(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """One row per scorer and reason of the run's skipped cells, with its count."""
    return records(con.execute(
        "SELECT scorer_id, reason, count(*) AS cells FROM scores WHERE run_id = ? AND status = 'skipped' "
        "GROUP BY scorer_id, reason ORDER BY scorer_id, cells DESC, reason", [run_id]))


def compare(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> list[dict[str, Any]]:
    """Rows of `compare_runs(run_a, run_b)` (run ids), one per scorer."""
    return records(con.execute("SELECT * FROM compare_runs(?, ?)", [run_a, run_b]))


def item_deltas(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str, scorer_id: str,
                limit: int | None) -> list[dict[str, Any]]:
    """Rows of `item_deltas(run_a, run_b, scorer_id)` (run ids), worst first, up to `limit`."""
    query = "SELECT * FROM item_deltas(?, ?, ?) ORDER BY gain ASC NULLS LAST, item_id"
    params: list[Any] = [run_a, run_b, scorer_id]
    if limit is not None:
        query += " LIMIT ?"
        params.append(limit)
    return records(con.execute(query, params))
