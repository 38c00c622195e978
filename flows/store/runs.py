"""A run's lifecycle in the `runs` table: recorded `running` with its writer, then its final status.

Plain functions over the caller's open write transaction (`Store` in store.py opens it), so that a run's
start lands with its items and its end with its last batch, each in one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from importlib import metadata
from typing import Any

import duckdb

from evalduck.flows.store.errors import UnknownRunError
from evalduck.flows.store.liveness import Writer
from evalduck.flows.store.upsert import ITEM_COLUMNS, RUN_SCORER_COLUMNS, replace_run_rows, upsert, utcnow

__all__ = ("RUN_STATUSES", "check_status", "evalduck_version", "record_start", "set_status")

# `interrupted`: the store found the run `running` with its writer process gone (killed, or its machine
# restarted); it is set on open, never by a writer. `budget_exceeded`: its spend reached its budget (max_cost),
# so it sent no new request; its cells in flight were stored, the others are missing (flows/engine/spend.py).
RUN_STATUSES = ("running", "completed", "failed", "cancelled", "interrupted", "budget_exceeded")


def evalduck_version() -> str | None:
    """The installed evalduck's version, recorded with each run and schema migration."""
    try:
        return metadata.version("evalduck")
    except metadata.PackageNotFoundError:
        return None


def check_status(status: str) -> None:
    """A ValueError unless `status` is one of RUN_STATUSES."""
    if status not in RUN_STATUSES:
        raise ValueError(f"run status must be one of {RUN_STATUSES}, got {status!r}")


def record_start(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    *,
    name: str | None,
    dataset: str | None,
    dataset_hash: str | None,
    config: str | None,
    flow_run_id: str | None,
    started_at: datetime | None,
    writer: Writer,
    item_rows: Sequence[tuple[Any, ...]],
    directions: Mapping[str, bool] | None,
) -> None:
    """Insert the run as `running` (`config`: its JSON text), or for an existing run (resume) set it running
    again with its new config; then its items and scorer directions (see Store.start_run)."""
    exists = con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if exists and exists[0]:
        con.execute(
            "UPDATE runs SET status = 'running', finished_at = NULL, config = ?, "
            "flow_run_id = coalesce(?, flow_run_id), evalduck_version = ?, "
            "writer_pid = ?, writer_host = ?, writer_token = ? WHERE run_id = ?",
            [config, flow_run_id, evalduck_version(), writer.pid, writer.host, writer.token, run_id],
        )
    else:
        con.execute(
            "INSERT INTO runs (run_id, name, dataset, dataset_hash, status, started_at, config, flow_run_id, "
            "evalduck_version, writer_pid, writer_host, writer_token) "
            "VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id, name, dataset, dataset_hash, started_at or utcnow(), config, flow_run_id,
                evalduck_version(), writer.pid, writer.host, writer.token,
            ],
        )
    upsert(con, "items", ITEM_COLUMNS, ("item_id",), run_id, item_rows)
    if directions is not None:  # staged like a batch: DuckDB 1.5's list parameters are slow (upsert.py)
        replace_run_rows(con, "run_scorers", RUN_SCORER_COLUMNS, run_id,
                         [(run_id, scorer_id, bool(better)) for scorer_id, better in directions.items()])


def set_status(con: duckdb.DuckDBPyConnection, run_id: str, status: str, where: object) -> None:
    """Set the run's status, and its finish time unless `running`; UnknownRunError (naming `where`) when
    there is no such run."""
    # No RETURNING: DuckLake does not support it on UPDATE.
    found = con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if found and found[0]:
        con.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                    [status, None if status == "running" else utcnow(), run_id])
    else:
        raise UnknownRunError(f"{where}: no run with id {run_id!r}")
