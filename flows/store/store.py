"""The results store: every operation is one short-lived connection and one transaction.

Holding no connection between calls is what lets two eval processes and a user's query share the
file (see connection.py and docs/schema.md). Batches are upserted by staging them in a temporary
table with DuckDB's appender, deleting the keys they replace and inserting them, all in one
transaction: a batch lands whole or not at all, and a crash loses only batches not yet written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import duckdb
from pydantic import BaseModel

from evalduck.flows.project.defaults import default_db_path
from evalduck.flows.store import lake
from evalduck.flows.store.connection import connect, held, transaction
from evalduck.flows.store.errors import StoreDiskError, StoreError, UnknownRunError, disk_refusal, write_refused
from evalduck.flows.store.liveness import gone_writers, mark_interrupted_runs, this_writer
from evalduck.flows.store.models import SCORE_COLUMNS, QueryResult, RunRecord, ScoreRow
from evalduck.flows.store.redact import redact_urls
from evalduck.flows.store.schema import check_readable, migrate
from evalduck.flows.store.target import StoreTarget, parse_target
from evalduck.flows.store.upsert import (
    ITEM_COLUMNS,
    RUN_SCORER_COLUMNS,
    item_tuples,
    replace_run_rows,
    score_tuples,
    to_json,
    upsert,
    utcnow,
)

__all__ = ("Store", "RunSummary", "default_db_path", "RUN_STATUSES")

# `interrupted`: the store found the run `running` with its writer process gone (killed, or its machine
# restarted); it is set on open, never by a writer.
RUN_STATUSES = ("running", "completed", "failed", "cancelled", "interrupted")
T = TypeVar("T")


def _evalduck_version() -> str | None:
    try:
        return metadata.version("evalduck")
    except metadata.PackageNotFoundError:
        return None


class RunSummary(BaseModel):
    """A run with one summary row per scorer (the `run_scorer_summary` view)."""

    run: RunRecord
    scorers: list[dict[str, Any]]


class Store:
    """The evalduck results store: a DuckDB file, or the shared DuckLake a `ducklake:` URL names (lake.py).
    Opening creates or migrates the schema (a newer schema is refused) and marks `interrupted` the runs left
    `running` by a process that is gone (`mark_interrupted`)."""

    def __init__(self, path: str | Path | None = None, *, lock_timeout: float | None = None,
                 reader: bool = False) -> None:
        """`reader`: for read commands. A file this process may not write (a read-only mount, another user's
        file, a full disk) is then opened read-only instead of refused: not migrated, no run marked
        `interrupted`; its `running` runs whose writer is gone are listed in `left_running` instead, and
        `read_only` is True."""
        self.target: StoreTarget = parse_target(path if path is not None else default_db_path())
        # What messages name: the file, or the lake's URL with its password masked.
        self.path: Path | str = self.target.path if self.target.path is not None else self.target.label
        self.lock_timeout = lock_timeout
        self.read_only = False
        self.left_running: list[str] = []
        if self.target.path is not None and not self.target.path.parent.is_dir():
            raise StoreError(f"{self.path}: folder {self.target.path.parent} does not exist")
        try:
            self.migrated_from, self.interrupted = self._retrying(self._open)
        except StoreError as exc:
            unwritable = isinstance(exc, StoreDiskError) or write_refused(exc)
            if not (reader and self.target.path is not None and unwritable):
                raise
            self.read_only = True
            self.migrated_from, self.interrupted = self._open_read_only(), []

    def _open(self) -> tuple[int, list[str]]:
        with self._connect() as con:
            migrated_from = migrate(con, str(self.path), _evalduck_version())
            if self.target.shared:
                lake.ensure_write_token(con)
            return migrated_from, mark_interrupted_runs(con)

    def _open_read_only(self) -> int:
        with self._connect(read_only=True) as con:
            found = check_readable(con, str(self.path), _evalduck_version())
            self.left_running = gone_writers(con)
        return found

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    @contextmanager
    def _connect(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        if self.target.path is None:
            with lake.session(self.target) as con:
                yield con
            return
        try:
            with connect(self.target.path, read_only=read_only or self.read_only, timeout=self.lock_timeout) as con:
                yield con
        except duckdb.Error as exc:
            self._raise_store_error(exc)
            raise

    def _raise_store_error(self, exc: duckdb.Error) -> None:
        """A DuckDB error as the store says it: a full disk as StoreDiskError, a file that cannot be opened
        (or read) as StoreError; others (a user's SQL) stay as they are (this returns)."""
        disk = disk_refusal(exc, self.path)
        if disk is not None:
            raise disk from exc
        if isinstance(exc, duckdb.IOException):
            raise StoreError(f"{self.path}: {exc}") from exc

    @contextmanager
    def held(self) -> Iterator[None]:
        """This process's operations inside the block share one opening of the file (connection.held): for a
        burst of them, such as a run's report; other processes wait for the block. The shared store keeps one
        attach per process anyway: nothing to do there."""
        if self.target.path is None:
            yield
            return
        with ExitStack() as stack:
            try:
                stack.enter_context(held(self.target.path, timeout=self.lock_timeout))
                yield
                stack.close()  # closing the file writes too (its checkpoint)
            except duckdb.Error as exc:
                self._raise_store_error(exc)
                raise

    @contextmanager
    def reading(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One read-only connection for a block of queries (the HTML report's dozen): the file opened once; on
        the shared store a cursor of this process's attach, in a transaction rolled back at the end (one
        snapshot, nothing written)."""
        with self._connect(read_only=True) as con:
            if not self.target.shared:
                yield con
                return
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            finally:
                con.execute("ROLLBACK")

    def _retrying(self, work: Callable[[], T]) -> T:
        """A file's operations run once (its lock serialises them); a lake's again after a commit conflict."""
        return lake.retry_conflicts(work) if self.target.shared else work()

    def _write(self, body: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
        """`body` in one write transaction; on the shared store it also updates the write token, so that
        overlapping writes conflict and are run again one after the other (exactly-once upserts)."""
        def once() -> T:
            with self._connect() as con, transaction(con):
                result = body(con)
                if self.target.shared:
                    lake.touch_write_token(con)
                return result
        return self._retrying(once)

    # ---- writes -------------------------------------------------------------------------------

    def start_run(
        self,
        run_id: str,
        name: str | None,
        dataset: str | None,
        dataset_hash: str | None,
        config: Mapping[str, Any] | None,
        flow_run_id: str | None = None,
        *,
        started_at: datetime | None = None,
        items: Sequence[Mapping[str, Any]] = (),
        directions: Mapping[str, bool] | None = None,
    ) -> None:
        """Record a new run as `running`; for an existing run (resume) mark it running again.

        This process is recorded as the run's writer (see liveness.py). `items` (as for `write_items`)
        land in the same transaction: one file open instead of two. `directions` (scorer id -> higher is
        better) fill `run_scorers`, replacing what a resumed run had. Credentials in URLs in `config` are
        masked (flows/store/redact.py).
        """
        item_rows = item_tuples(run_id, items)
        stored_config = to_json(redact_urls(dict(config or {})))
        writer = this_writer()

        def body(con: duckdb.DuckDBPyConnection) -> None:
            exists = con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()
            if exists and exists[0]:
                con.execute(
                    "UPDATE runs SET status = 'running', finished_at = NULL, config = ?, "
                    "flow_run_id = coalesce(?, flow_run_id), evalduck_version = ?, "
                    "writer_pid = ?, writer_host = ?, writer_token = ? WHERE run_id = ?",
                    [stored_config, flow_run_id, _evalduck_version(), writer.pid, writer.host, writer.token, run_id],
                )
            else:
                con.execute(
                    "INSERT INTO runs (run_id, name, dataset, dataset_hash, status, started_at, config, flow_run_id, "
                    "evalduck_version, writer_pid, writer_host, writer_token) "
                    "VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                    [
                        run_id, name, dataset, dataset_hash, started_at or utcnow(), stored_config, flow_run_id,
                        _evalduck_version(), writer.pid, writer.host, writer.token,
                    ],
                )
            upsert(con, "items", ITEM_COLUMNS, ("item_id",), run_id, item_rows)
            if directions is not None:  # staged like a batch: DuckDB 1.5's list parameters are slow (upsert.py)
                replace_run_rows(con, "run_scorers", RUN_SCORER_COLUMNS, run_id,
                                 [(run_id, scorer_id, bool(better)) for scorer_id, better in directions.items()])

        self._write(body)

    def mark_interrupted(self) -> list[str]:
        """Mark `interrupted` every `running` run whose writer process is certainly gone; returns their ids.

        Opening a Store does it once; a long-lived Store can call it again.
        """
        def once() -> list[str]:
            with self._connect() as con:
                return mark_interrupted_runs(con)
        return self._retrying(once)

    def finish_run(self, run_id: str, status: str) -> None:
        """Set the run's final status (`completed`, `failed` or `cancelled`) and finish time."""
        _check_status(status)
        self._write(lambda con: self._set_status(con, run_id, status))

    def _set_status(self, con: duckdb.DuckDBPyConnection, run_id: str, status: str) -> None:
        # No RETURNING: DuckLake does not support it on UPDATE.
        found = con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if found and found[0]:
            con.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                        [status, None if status == "running" else utcnow(), run_id])
        else:
            raise UnknownRunError(f"{self.path}: no run with id {run_id!r}")

    def write_items(self, run_id: str, items: Sequence[Mapping[str, Any]]) -> int:
        """Upsert items (item_id, input, output, ground_truth, request_context, metadata); returns the count.

        An item without `item_id` gets `evalduck.flows.store.ids.item_id(item)`. camelCase keys are accepted.
        """
        return self.write_batch(run_id, items=items)[0]

    def write_scores(self, run_id: str, rows: Sequence[ScoreRow | Mapping[str, Any]]) -> int:
        """Upsert score cells: one row per (run_id, item_id, scorer_id), the last write wins."""
        return self.write_batch(run_id, scores=rows)[1]

    def write_batch(
        self,
        run_id: str,
        *,
        items: Sequence[Mapping[str, Any]] = (),
        scores: Sequence[ScoreRow | Mapping[str, Any]] = (),
        status: str | None = None,
    ) -> tuple[int, int]:
        """Upsert items and score cells in one connection and one transaction: half the cost of two calls.

        `status` also sets the run's final status (as `finish_run`) in that transaction: a run's last
        batch and its end are one file open. Returns (items written, cells written). The batch lands
        whole or not at all.
        """
        item_rows = item_tuples(run_id, items)
        score_rows = score_tuples(run_id, scores)
        if status is not None:
            _check_status(status)
        elif not item_rows and not score_rows:
            return 0, 0

        def body(con: duckdb.DuckDBPyConnection) -> None:
            upsert(con, "items", ITEM_COLUMNS, ("item_id",), run_id, item_rows)
            upsert(con, "scores", SCORE_COLUMNS, ("item_id", "scorer_id"), run_id, score_rows)
            if status is not None:
                self._set_status(con, run_id, status)

        self._write(body)
        return len(item_rows), len(score_rows)

    # ---- reads --------------------------------------------------------------------------------

    def completed_cells(self, run_id: str) -> set[tuple[str, str]]:
        """(item_id, scorer_id) cells that are `scored` or `skipped`; a resume recomputes the rest."""
        with self._connect(read_only=True) as con:
            rows = con.execute(
                "SELECT item_id, scorer_id FROM scores WHERE run_id = ? AND status IN ('scored', 'skipped')", [run_id]
            ).fetchall()
        return {(item, scorer) for item, scorer in rows}

    def last_completed(self, name: str) -> str | None:
        """The newest `completed` run of this name (what a new run of it is compared with), if any: an
        interrupted, failed or cancelled run holds only part of its cells."""
        with self._connect(read_only=True) as con:
            row = con.execute("SELECT run_id FROM runs WHERE name = ? AND status = 'completed' "
                              "ORDER BY started_at DESC, run_id DESC LIMIT 1", [name]).fetchone()
        return str(row[0]) if row is not None else None

    def resolve_run(self, ref: str) -> str:
        """A run id from `latest`, `previous`, an id, a name (its newest run) or a unique id prefix."""
        with self._connect(read_only=True) as con:
            return self._resolve(con, ref)

    def _resolve(self, con: duckdb.DuckDBPyConnection, ref: str) -> str:
        ref = ref.strip()
        if ref in ("latest", "previous"):
            offset = 0 if ref == "latest" else 1
            row = con.execute(
                "SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1 OFFSET ?", [offset]
            ).fetchone()
            if row is None:
                (count,) = con.execute("SELECT count(*) FROM runs").fetchone() or (0,)
                raise UnknownRunError(f"{self.path}: no {ref!r} run: the database holds {count} run(s)")
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
        raise UnknownRunError(
            f"{self.path}: no run with id or name {ref!r} (also accepted: latest, previous).{hint}"
        )

    def run_record(self, ref: str) -> RunRecord:
        """One run (any reference) with its counts, as `list_runs` gives it."""
        with self._connect(read_only=True) as con:
            rid = self._resolve(con, ref)
            return RunRecord.model_validate(
                _decode_config(_records(con.execute("SELECT * FROM run_overview WHERE run_id = ?", [rid]))[0])
            )

    def list_runs(self, limit: int = 20) -> list[RunRecord]:
        """Recent runs, newest first, with item, score and error counts."""
        result = self.sql("SELECT * FROM run_overview ORDER BY started_at DESC, run_id DESC LIMIT ?", [limit])
        return [RunRecord.model_validate(_decode_config(rec)) for rec in result.records()]

    def run_summary(self, run_id: str) -> RunSummary:
        """The run (any reference) and its per-scorer summary."""
        with self._connect(read_only=True) as con:
            rid = self._resolve(con, run_id)
            run = _records(con.execute("SELECT * FROM run_overview WHERE run_id = ?", [rid]))[0]
            scorers = _records(
                con.execute("SELECT * FROM run_scorer_summary WHERE run_id = ? ORDER BY scorer_id", [rid])
            )
        return RunSummary(run=RunRecord.model_validate(_decode_config(run)), scorers=scorers)

    def worst_items(self, run_id: str, limit: int = 5) -> list[dict[str, Any]]:
        """Per scorer, its errors, then the `limit` worst-scored items of a run (the lowest, or the highest for a
        lower-is-better scorer; skipped cells are no finding), with the scorer's direction (`higher_is_better`)
        and the item's RAG and agent fields (`n_passages` of its context, `expected_tool`, `expected_tool_order`)."""
        with self._connect(read_only=True) as con:
            rid = self._resolve(con, run_id)
            return _records(con.execute(
                """
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
                """,
                [rid, limit],
            ))

    def skipped_reasons(self, run_id: str) -> list[dict[str, Any]]:
        """Why a run's cells were skipped: one row per scorer and reason, with its count of cells."""
        with self._connect(read_only=True) as con:
            rid = self._resolve(con, run_id)
            return _records(con.execute(
                "SELECT scorer_id, reason, count(*) AS cells FROM scores WHERE run_id = ? AND status = 'skipped' "
                "GROUP BY scorer_id, reason ORDER BY scorer_id, cells DESC, reason", [rid]))

    def compare(self, run_a: str, run_b: str) -> list[dict[str, Any]]:
        """Rows of `compare_runs(run_a, run_b)` (references resolved), one per scorer."""
        with self._connect(read_only=True) as con:
            a, b = self._resolve(con, run_a), self._resolve(con, run_b)
            return _records(con.execute("SELECT * FROM compare_runs(?, ?)", [a, b]))

    def item_deltas(self, run_a: str, run_b: str, scorer_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Rows of `item_deltas(run_a, run_b, scorer_id)`, worst first (by `gain`, the direction-signed delta)."""
        with self._connect(read_only=True) as con:
            a, b = self._resolve(con, run_a), self._resolve(con, run_b)
            query = "SELECT * FROM item_deltas(?, ?, ?) ORDER BY gain ASC NULLS LAST, item_id"
            params: list[Any] = [a, b, scorer_id]
            if limit is not None:
                query += " LIMIT ?"
                params.append(limit)
            return _records(con.execute(query, params))

    def sql(self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None, *, write: bool = False) -> QueryResult:
        """Run one query on a read-only connection (`write=True` for a read-write one; on the shared store, a
        query without `write` runs in a transaction that is rolled back)."""
        with self._connect() if write else self.reading() as con:
            cursor = con.execute(query, params) if params is not None else con.execute(query)
            if cursor.description is None:
                return QueryResult(columns=[], rows=[])
            columns = [d[0] for d in cursor.description]
            return QueryResult(columns=columns, rows=[tuple(r) for r in cursor.fetchall()])


def _check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise ValueError(f"run status must be one of {RUN_STATUSES}, got {status!r}")


def _records(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    columns = [d[0] for d in cursor.description or ()]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def _decode_config(record: dict[str, Any]) -> dict[str, Any]:
    config = record.get("config")
    if isinstance(config, str):
        record = {**record, "config": json.loads(config)}
    return record
