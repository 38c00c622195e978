"""A run's spend against its budget (``max_cost``, issue 28): the cost litellm reports for each request this run
made (a judge step's or a ``model:`` target's, never a cached one), summed as each finishes, on top of what the
run had stored before (a resume: the stored cost of all its cells). Once the spend reaches the budget the run sends
no new request: ``StepRunner`` asks ``allow()`` before it dispatches a judge step or a target call; what is in
flight finishes and is stored, and the run ends ``budget_exceeded``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evalduck.errors import EvalduckError
from evalduck.flows.store import Store

__all__ = ("BudgetReached", "Spend", "kept_spend", "BUDGET_EXCEEDED")

BUDGET_EXCEEDED = "budget_exceeded"  # the run status of a run its budget stopped (flows/store/runs.py)


class BudgetReached(EvalduckError, RuntimeError):
    """A request the run did not send: its spend had reached its budget (the cell is left for a resume)."""


class Spend:
    """The run's spend in USD and its budget (None: no budget; the spend is still summed). One event loop
    adds to it and reads it, so it needs no lock."""

    def __init__(self, budget: float | None, stored: float = 0.0) -> None:
        self.budget = budget
        self.total = stored
        self.refused = 0  # requests not sent because the budget was reached

    @property
    def reached(self) -> bool:
        return self.budget is not None and self.total >= self.budget

    @property
    def stopped(self) -> bool:
        """The budget kept the run from sending a request: the run is ``budget_exceeded``, not complete."""
        return self.refused > 0

    def add(self, usage: Iterable[Mapping[str, Any]]) -> None:
        """A finished request's usage records (cost None: unpriced, counts nothing)."""
        self.total += sum(float(u["cost"]) for u in usage if u.get("cost") is not None)

    def allow(self, label: str) -> None:
        """Before a new request (``label``: the step or target): raises ``BudgetReached`` once the budget is
        reached."""
        if self.reached:
            self.refused += 1
            raise BudgetReached(f"{label}: not sent, the run's spend ${self.total:.4f} reached its budget "
                                f"${self.budget:.4f} (max_cost)")


def kept_spend(store: Store, run_id: str) -> float:
    """What a resumed run has spent already: the stored cost of its cells, errored ones too (money spent: a
    resume computes them again, their finished steps from the step cache, and replaces their rows, so the stored
    total after it leaves out those first attempts, while the budget counted them)."""
    rows = store.sql("SELECT coalesce(sum(cost), 0) FROM scores WHERE run_id = ?", [run_id]).rows
    return float(rows[0][0]) if rows else 0.0
