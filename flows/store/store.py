"""The results store: every operation is one short-lived connection and one transaction.

Holding no connection between calls is what lets two eval processes and a user's query share the
file (see connection.py and docs/schema.md). Batches are upserted by staging them in a temporary
table with DuckDB's appender, deleting the keys they replace and inserting them, all in one
transaction: a batch lands whole or not at all, and a crash loses only batches not yet written.
This class holds the connection rules; the SQL it runs is in queries.py (reads) and runs.py (a run's row).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from evalduck.flows.project.defaults import default_db_path
from evalduck.flows.store import lake, queries
from evalduck.flows.store.connection import connect, held, transaction
from evalduck.flows.store.errors import StoreDiskError, StoreError, disk_refusal, write_refused
from evalduck.flows.store.liveness import gone_writers, mark_interrupted_runs, this_writer
from evalduck.flows.store.models import SAMPLE_COLUMNS, SCORE_COLUMNS, QueryResult, RunRecord, SampleRow, ScoreRow
from evalduck.flows.store.queries import RunSummary
from evalduck.flows.store.redact import redact_urls
from evalduck.flows.store.runs import RUN_STATUSES, check_status, evalduck_version, record_start, set_status
from evalduck.flows.store.schema import check_readable, migrate
from evalduck.flows.store.target import StoreTarget, parse_target
from evalduck.flows.store.upsert import ITEM_COLUMNS, item_tuples, sample_tuples, score_tuples, to_json, upsert

__all__ = ("Store", "RunSummary", "default_db_path", "RUN_STATUSES")

T = TypeVar("T")


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
            migrated_from = migrate(con, str(self.path), evalduck_version())
            if self.target.shared:
                lake.ensure_write_token(con)
            return migrated_from, mark_interrupted_runs(con)

    def _open_read_only(self) -> int:
        with self._connect(read_only=True) as con:
            found = check_readable(con, str(self.path), evalduck_version())
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

    def write(self, body: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
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
        self.write(lambda con: record_start(
            con, run_id, name=name, dataset=dataset, dataset_hash=dataset_hash, config=stored_config,
            flow_run_id=flow_run_id, started_at=started_at, writer=writer, item_rows=item_rows, directions=directions))

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
        check_status(status)
        self.write(lambda con: set_status(con, run_id, status, self.path))

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
        samples: Sequence[SampleRow] = (),
    ) -> tuple[int, int]:
        """Upsert items and score cells in one connection and one transaction: half the cost of two calls.

        `status` also sets the run's final status (as `finish_run`) in that transaction: a run's last
        batch and its end are one file open. Returns (items written, cells written). The batch lands
        whole or not at all.
        """
        item_rows = item_tuples(run_id, items)
        score_rows, sample_rows = score_tuples(run_id, scores), sample_tuples(run_id, samples)
        if status is not None:
            check_status(status)
        elif not item_rows and not score_rows and not sample_rows:
            return 0, 0

        def body(con: duckdb.DuckDBPyConnection) -> None:
            upsert(con, "items", ITEM_COLUMNS, ("item_id",), run_id, item_rows)
            upsert(con, "scores", SCORE_COLUMNS, ("item_id", "scorer_id"), run_id, score_rows)
            upsert(con, "score_samples", SAMPLE_COLUMNS, ("item_id", "scorer_id", "sample"), run_id, sample_rows)
            if status is not None:
                set_status(con, run_id, status, self.path)

        self.write(body)
        return len(item_rows), len(score_rows)

    # ---- reads: the queries are in queries.py ---------------------------------------------------

    def _read(self, query: Callable[..., T], *refs: str, args: Sequence[Any] = ()) -> T:
        """`query(con, *run ids, *args)` on one read-only connection, each of `refs` resolved to a run id."""
        with self._connect(read_only=True) as con:
            return query(con, *(queries.resolve(con, ref, self.path) for ref in refs), *args)

    def completed_cells(self, run_id: str) -> set[tuple[str, str]]:
        """(item_id, scorer_id) cells that are `scored` or `skipped`; a resume recomputes the rest."""
        with self._connect(read_only=True) as con:
            return queries.completed_cells(con, run_id)

    def last_completed(self, name: str) -> str | None:
        """The newest `completed` run of this name (what a new run of it is compared with), if any: an
        interrupted, failed or cancelled run holds only part of its cells."""
        with self._connect(read_only=True) as con:
            return queries.last_completed(con, name)

    def resolve_run(self, ref: str) -> str:
        """A run id from `latest`, `previous`, an id, a name (its newest run) or a unique id prefix."""
        with self._connect(read_only=True) as con:
            return queries.resolve(con, ref, self.path)

    def run_record(self, ref: str) -> RunRecord:
        """One run (any reference) with its counts, as `list_runs` gives it."""
        return self._read(queries.run_record, ref)

    def list_runs(self, limit: int = 20) -> list[RunRecord]:
        """Recent runs, newest first, with item, score and error counts."""
        result = self.sql("SELECT * FROM run_overview ORDER BY started_at DESC, run_id DESC LIMIT ?", [limit])
        return [RunRecord.model_validate(queries.decode_config(rec)) for rec in result.records()]

    def run_summary(self, run_id: str) -> RunSummary:
        """The run (any reference) and its per-scorer summary."""
        return self._read(queries.run_summary, run_id)

    def worst_items(self, run_id: str, limit: int = 5) -> list[dict[str, Any]]:
        """Per scorer, its errors, then the `limit` worst-scored items of a run (the lowest, or the highest for a
        lower-is-better scorer; skipped cells are no finding), with the scorer's direction (`higher_is_better`)
        and the item's RAG and agent fields (`n_passages` of its context, `expected_tool`, `expected_tool_order`)."""
        return self._read(queries.worst_items, run_id, args=(limit,))

    def skipped_reasons(self, run_id: str) -> list[dict[str, Any]]:
        """Why a run's cells were skipped: one row per scorer and reason, with its count of cells."""
        return self._read(queries.skipped_reasons, run_id)

    def compare(self, run_a: str, run_b: str) -> list[dict[str, Any]]:
        """Rows of `compare_runs(run_a, run_b)` (references resolved), one per scorer."""
        return self._read(queries.compare, run_a, run_b)

    def item_deltas(self, run_a: str, run_b: str, scorer_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Rows of `item_deltas(run_a, run_b, scorer_id)`, worst first (by `gain`, the direction-signed delta)."""
        return self._read(queries.item_deltas, run_a, run_b, args=(scorer_id, limit))

    def sql(self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None, *, write: bool = False) -> QueryResult:
        """Run one query on a read-only connection (`write=True` for a read-write one; on the shared store, a
        query without `write` runs in a transaction that is rolled back)."""
        with self._connect() if write else self.reading() as con:
            cursor = con.execute(query, params) if params is not None else con.execute(query)
            if cursor.description is None:
                return QueryResult(columns=[], rows=[])
            columns = [d[0] for d in cursor.description]
            return QueryResult(columns=columns, rows=[tuple(r) for r in cursor.fetchall()])
