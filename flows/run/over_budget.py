"""A budget's check before a run (issue 28): the preflight's low estimate (flows/run/preflight.py, what `--dry-run`
prints) must fit in ``max_cost``, or the run is refused before anything is sent or stored. Apart from
flows/run/max_cost.py, which prepare_run imports, since the preflight itself imports prepare_run's checks."""

from __future__ import annotations

from typing import Any

from evalduck.errors import EvalduckError
from evalduck.flows.config import RunOptions
from evalduck.flows.run.preflight import preflight

__all__ = ("OverBudgetError", "refuse_over_budget")


class OverBudgetError(EvalduckError, ValueError):
    """A budget was set and the preflight's low estimate of the run's cost is above it (exit 1)."""


def refuse_over_budget(data: Any, scorers: Any, target: Any, options: RunOptions) -> None:
    """Before the run (the flows call it before prepare_run): with a budget, the preflight's low estimate of what
    it will send (as `--dry-run` prints it) must fit in it. On a resume the estimate covers the cells left and is
    held against the whole budget (the spend already stored counts once the run goes: flows/engine/spend.py).

    Raises:
        OverBudgetError: one line with the estimate, the budget and what to do.
    """
    if options.max_cost is None:
        return
    estimate = preflight(data=data, scorers=scorers, target=target, options=options)
    if estimate.cost_low > options.max_cost:
        raise OverBudgetError(
            f"--max-cost {options.max_cost:g}: the run's {sum(line.to_send for line in estimate.lines):,} requests "
            f"to send are estimated at ${estimate.cost_low:.4f} to ${estimate.cost_high:.4f}, above the budget even "
            "at the low estimate; nothing was sent. Raise --max-cost, or see where it goes with --dry-run")
