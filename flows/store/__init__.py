"""The DuckDB results store: schema and migrations, crash-safe upserts, run references, comparisons.

Never imports prefect, so the results CLI starts fast.
"""

from __future__ import annotations

from evalduck.flows.store.errors import (
    SchemaVersionError,
    StoreDiskError,
    StoreError,
    StoreLockedError,
    UnknownRunError,
)
from evalduck.flows.store.ids import item_id, item_ids
from evalduck.flows.store.models import QueryResult, RunRecord, SampleRow, ScoreRow, ScoreStatus
from evalduck.flows.store.resume import DatasetMismatchError, check_resume_dataset
from evalduck.flows.store.schema import SCHEMA_VERSION
from evalduck.flows.store.store import RUN_STATUSES, RunSummary, Store, default_db_path
from evalduck.flows.store.writer import ResultWriter

__all__ = (
    "Store",
    "ResultWriter",
    "ScoreRow",
    "SampleRow",
    "ScoreStatus",
    "RunRecord",
    "RunSummary",
    "QueryResult",
    "item_id",
    "item_ids",
    "default_db_path",
    "SCHEMA_VERSION",
    "RUN_STATUSES",
    "StoreError",
    "UnknownRunError",
    "SchemaVersionError",
    "StoreLockedError",
    "StoreDiskError",
    "DatasetMismatchError",
    "check_resume_dataset",
)
