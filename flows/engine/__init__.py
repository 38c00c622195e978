"""The body of an eval run (``execute``), given a ``RunPlan`` that ``evalduck.flows.run.prepare`` built and checked,
and the ``EngineServices`` the run's scope chose.

plan.py (what a run is given and returns), run.py (the run on one event loop), steps.py (where each step runs),
dispatch.py (where its task runs execute: here or on Dask; portable.py, what a Dask worker is sent),
batches.py (the one batcher), cells.py (a cell's row), cache_ledger.py (why a step hit or missed the cache),
quiet.py (Prefect's routine task-run lines dropped).
"""

from __future__ import annotations

from evalduck.flows.engine.plan import (
    EngineServices,
    Executed,
    FailFast,
    ItemResult,
    MisconfiguredRun,
    RunPlan,
    StoreWriteError,
)
from evalduck.flows.engine.run import Run

__all__ = ("RunPlan", "EngineServices", "Executed", "ItemResult", "FailFast", "MisconfiguredRun", "StoreWriteError",
           "execute")


async def execute(plan: RunPlan, services: EngineServices) -> Executed:
    """Run every wanted cell of the plan; results land in the store as they finish, and the run is marked
    `completed` with the last of them. When it raises, the run's status is the caller's to record."""
    return await Run(plan, services).run()
