"""The body of an eval run (``execute``), given a ``RunPlan`` that ``evalduck.flows.run.prepare`` built and checked.

plan.py (what a run is given), run.py (the run on one event loop), steps.py (where each step runs),
dispatch.py (where its task runs execute: here or on Dask; portable.py, what a Dask worker is sent),
batches.py (the one batcher), cells.py (a cell's row), cache_ledger.py (why a step hit or missed the cache),
quiet.py (Prefect's routine task-run lines dropped).
"""

from __future__ import annotations

from typing import Any

from evalduck.flows.engine.plan import FailFast, ItemResult, MisconfiguredRun, RunPlan, StoreWriteError
from evalduck.flows.engine.run import Run

__all__ = ("RunPlan", "ItemResult", "FailFast", "MisconfiguredRun", "StoreWriteError", "execute")


async def execute(plan: RunPlan) -> list[dict[str, Any]]:
    """Run every wanted cell of the plan; results land in the store as they finish, and the run is marked
    `completed` with the last of them. When it raises, the run's status is the caller's to record. Returns
    the cache's hits and misses per step, with why each missed (flows/engine/cache_ledger.py)."""
    return await Run(plan).run()
