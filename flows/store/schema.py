"""Schema versions and the migrations between them, applied on open in one transaction.

A new file runs every migration from 1, so a fresh file and an upgraded one have the same columns
in the same order. The views and macros of `macros.sql` are recreated after any migration.
"""

from __future__ import annotations

import hashlib
from importlib import resources

import duckdb

from evalduck.flows.store.connection import transaction
from evalduck.flows.store.errors import SchemaVersionError, StoreError
from evalduck.flows.store.tdist import t_quantile_table

__all__ = ("SCHEMA_VERSION", "MIGRATIONS", "current_version", "check_readable", "migrate", "macros_sql")

# v1: the first schema (runs, items, scores without judge usage).
_V1 = """
CREATE TABLE schema_version (
    version INTEGER NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    evalduck_version VARCHAR
);
CREATE TABLE runs (
    run_id VARCHAR NOT NULL,
    name VARCHAR,
    dataset VARCHAR,
    status VARCHAR NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    config JSON
);
CREATE TABLE items (
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    input JSON,
    output JSON,
    ground_truth JSON,
    metadata JSON
);
CREATE TABLE scores (
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    scorer_id VARCHAR NOT NULL,
    scorer_version VARCHAR NOT NULL,
    score DOUBLE,
    status VARCHAR NOT NULL,
    reason VARCHAR,
    error VARCHAR,
    preprocess_step_result JSON,
    analyze_step_result JSON,
    created_at TIMESTAMPTZ NOT NULL
);
"""

# v2: dataset hash, Prefect flow run and evalduck version per run; request context per item;
# prompts, judge model, tokens, cost and latency per score; the t quantile table for compare_runs.
_V2 = """
ALTER TABLE runs ADD COLUMN dataset_hash VARCHAR;
ALTER TABLE runs ADD COLUMN flow_run_id VARCHAR;
ALTER TABLE runs ADD COLUMN evalduck_version VARCHAR;
ALTER TABLE items ADD COLUMN request_context JSON;
ALTER TABLE items ADD COLUMN created_at TIMESTAMPTZ;
ALTER TABLE scores ADD COLUMN prompts JSON;
ALTER TABLE scores ADD COLUMN judge_model VARCHAR;
ALTER TABLE scores ADD COLUMN prompt_tokens BIGINT;
ALTER TABLE scores ADD COLUMN completion_tokens BIGINT;
ALTER TABLE scores ADD COLUMN cost DOUBLE;
ALTER TABLE scores ADD COLUMN latency_s DOUBLE;
CREATE TABLE t_quantile_975 (df INTEGER NOT NULL, q DOUBLE NOT NULL);
"""

# v3: the process writing a run (pid, host, start token; flows/store/liveness.py), so a run whose process
# was killed can be told from one still going and marked `interrupted`.
_V3 = """
ALTER TABLE runs ADD COLUMN writer_pid BIGINT;
ALTER TABLE runs ADD COLUMN writer_host VARCHAR;
ALTER TABLE runs ADD COLUMN writer_token VARCHAR;
"""

# v4: the run fields of the scorer catalogue (SCORERS.md 0.1) per item: retrieved `context` passages, the
# expected tool and tool order; and `run_scorers`, each run's scorers with their direction (filled at run
# start), which compare_runs, the gate and the report read. Runs stored before v4 only had higher-is-better
# scorers (the seeds, and custom scorers, which had no direction), so they are filled in from their cells.
_V4 = """
ALTER TABLE items ADD COLUMN context JSON;
ALTER TABLE items ADD COLUMN expected_tool VARCHAR;
ALTER TABLE items ADD COLUMN expected_tool_order JSON;
CREATE TABLE run_scorers (
    run_id VARCHAR NOT NULL,
    scorer_id VARCHAR NOT NULL,
    higher_is_better BOOLEAN NOT NULL
);
INSERT INTO run_scorers SELECT DISTINCT run_id, scorer_id, true FROM scores ORDER BY run_id, scorer_id;
"""

# v5: the judge as a measured instrument. Repeated judging: per cell, how many samples judged it and their
# standard deviation (NULL for a cell judged once, as every cell before v5); per sample, what it said
# (`score_samples`), for the judge's noise. `calibrations`: a judge's agreement with human labels, one row per
# (scorer id, scorer version, judge model, prompt fingerprint), which the gate's --min-agreement reads. `labels`:
# a person's label of a run's cell (`evalduck label`), one per (run, item, scorer).
_V5 = """
ALTER TABLE scores ADD COLUMN samples INTEGER;
ALTER TABLE scores ADD COLUMN score_sd DOUBLE;
CREATE TABLE score_samples (
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    scorer_id VARCHAR NOT NULL,
    sample INTEGER NOT NULL,
    status VARCHAR NOT NULL,
    score DOUBLE,
    reason VARCHAR,
    error VARCHAR,
    analyze_step_result JSON,
    judge_model VARCHAR,
    prompt_tokens BIGINT,
    completion_tokens BIGINT,
    cost DOUBLE,
    latency_s DOUBLE,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE calibrations (
    scorer_id VARCHAR NOT NULL,
    scorer_version VARCHAR NOT NULL,
    judge_model VARCHAR NOT NULL,
    prompt_fingerprint VARCHAR NOT NULL,
    labels VARCHAR,
    run_id VARCHAR,
    n INTEGER NOT NULL,
    kappa DOUBLE, kappa_low DOUBLE, kappa_high DOUBLE,
    alpha DOUBLE, alpha_low DOUBLE, alpha_high DOUBLE,
    spearman DOUBLE, spearman_low DOUBLE, spearman_high DOUBLE,
    mae DOUBLE, mae_low DOUBLE, mae_high DOUBLE,
    bias DOUBLE, bias_low DOUBLE, bias_high DOUBLE,
    grid JSON,
    confusion JSON,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE labels (
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    scorer_id VARCHAR NOT NULL,
    value DOUBLE NOT NULL,
    labeller VARCHAR,
    created_at TIMESTAMPTZ NOT NULL
);
"""

# v6: sweeps (docs/sweeps.md). A sweep is one row of `sweeps` (its file as loaded, its axes, its baseline's label,
# its status); each of its runs names it (`runs.sweep_id`) with its candidate's label and repeat index (NULL for
# a run outside a sweep, as every run before v6).
_V6 = """
CREATE TABLE sweeps (
    sweep_id VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    file VARCHAR,
    spec JSON,
    axes JSON,
    baseline VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    flow_run_id VARCHAR
);
ALTER TABLE runs ADD COLUMN sweep_id VARCHAR;
ALTER TABLE runs ADD COLUMN candidate VARCHAR;
ALTER TABLE runs ADD COLUMN sweep_repeat INTEGER;
"""

# v7: the seconds the target took to answer each item (a model or a Python function; NULL for a dataset's own
# outputs, for items stored before v7, and for an output cached before targets were timed), for the sweep
# leaderboard's latency p50/p95. A cached output keeps the time its call took.
_V7 = """
ALTER TABLE items ADD COLUMN target_latency_s DOUBLE;
"""

MIGRATIONS: dict[int, str] = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5, 6: _V6, 7: _V7}
SCHEMA_VERSION = max(MIGRATIONS)


def macros_sql() -> str:
    """The text of the views and macros stored in every file."""
    return resources.files("evalduck.flows.store").joinpath("macros.sql").read_text(encoding="utf-8")


def macros_fingerprint() -> str:
    """Short hash of macros.sql, kept as the comment of `schema_version` to spot stale stored SQL."""
    return "macros:" + hashlib.sha256(macros_sql().encode("utf-8")).hexdigest()[:16]


def _refresh_macros(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create the views and macros and record their fingerprint; inside the caller's transaction."""
    con.execute(macros_sql())
    con.execute(f"COMMENT ON TABLE schema_version IS '{macros_fingerprint()}'")


def _stored_fingerprint(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute(
        "SELECT comment FROM duckdb_tables() WHERE database_name = current_database() AND table_name = 'schema_version'"
    ).fetchone()
    return None if row is None else row[0]


def _table_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()").fetchall()
    return {name for (name,) in rows}


def current_version(con: duckdb.DuckDBPyConnection, path: str) -> int:
    """The file's schema version; 0 for an empty file. A non-evalduck database is refused."""
    tables = _table_names(con)
    if "schema_version" in tables:
        (version,) = con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone() or (0,)
        return int(version)
    if tables:
        raise StoreError(
            f"{path}: this DuckDB file has tables ({', '.join(sorted(tables))}) but no evalduck schema_version "
            f"table; it is not an evalduck results database. Use another --db / EVALDUCK_DB path."
        )
    return 0


def _refuse_newer(found: int, path: str, evalduck_version: str | None) -> None:
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path}: the file has evalduck schema version {found}, newer than the {SCHEMA_VERSION} this evalduck "
            f"({evalduck_version or 'unknown version'}) understands. Upgrade evalduck to read it; the file was "
            f"left untouched."
        )


def check_readable(con: duckdb.DuckDBPyConnection, path: str, evalduck_version: str | None) -> int:
    """For a file opened read-only, which `migrate` cannot bring up to date: its schema version, when this
    evalduck's queries can read it (the newest schema); a StoreError saying what to do otherwise."""
    found = current_version(con, path)
    _refuse_newer(found, path, evalduck_version)
    if found < SCHEMA_VERSION:
        raise StoreError(
            f"{path}: the file has evalduck schema version {found}; this evalduck reads version {SCHEMA_VERSION} "
            "and would upgrade it, but the file cannot be written here (read-only). Open a writable copy, or read "
            "it with the evalduck that wrote it."
        )
    return found


def migrate(con: duckdb.DuckDBPyConnection, path: str, evalduck_version: str | None, target: int = SCHEMA_VERSION) -> int:
    """Bring the file to `target` (default the newest schema) in one transaction; returns the old version.

    The version is read inside that transaction: on the shared store, a process that read it before another
    one's migration committed would create tables that now exist (a catalog error, not a retried conflict);
    read inside, its transaction's snapshot predates the other's tables, and its commit conflicts instead."""
    with transaction(con):
        found = current_version(con, path)
        _refuse_newer(found, path, evalduck_version)
        if found >= target:
            if found == SCHEMA_VERSION and _stored_fingerprint(con) != macros_fingerprint():
                # Same schema, different stored SQL (a development build changed macros.sql): refresh it.
                _refresh_macros(con)
            return found
        for version in range(found + 1, target + 1):
            con.execute(MIGRATIONS[version])
            if version == 2:
                table = t_quantile_table()
                con.execute(
                    "INSERT INTO t_quantile_975 SELECT unnest(?::INTEGER[]), unnest(?::DOUBLE[])",
                    [[df for df, _ in table], [q for _, q in table]],
                )
            con.execute(
                "INSERT INTO schema_version (version, evalduck_version) VALUES (?, ?)", [version, evalduck_version]
            )
        if target == SCHEMA_VERSION:
            _refresh_macros(con)
    return found
