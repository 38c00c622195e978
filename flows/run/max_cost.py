"""``max_cost`` before and after a run (issue 28; the spend during it is flows/engine/spend.py): the models a run
pays for, priced by litellm's price map before anything is sent (a model it cannot price is refused unless
``allow_unpriced``), and the line a run its budget stopped ends with."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from evalduck.errors import EvalduckError
from evalduck.flows.config import RunOptions
from evalduck.flows.inputs.targets import Target
from evalduck.scorers import JudgeSettings, Scorer

__all__ = ("UnpricedModelError", "paid_models", "model_priced", "refuse_unpriced", "budget_line", "next_budget")

# litellm's per-call prices (completion(..., input_cost_per_token=...)): a judge's `extra` giving one prices it.
_CALL_PRICES = ("input_cost_per_token", "output_cost_per_token", "input_cost_per_second", "output_cost_per_second")


class UnpricedModelError(EvalduckError, ValueError):
    """A budget was set and a model the run calls has no price in litellm's price map (exit 1)."""


def paid_models(scorers: Iterable[Scorer], target: Target) -> dict[str, JudgeSettings]:
    """The models the run sends requests to, by name: every judge step's, and a ``model:`` target's."""
    found = {step.judge.model: step.judge for s in scorers for step in s.steps if step.is_judge and step.judge}
    if target.kind == "model" and target.settings is not None:
        found.setdefault(target.settings.model, target.settings)
    return found


def model_priced(settings: JudgeSettings) -> bool:
    """Whether litellm prices this model's requests: its price map (``litellm.model_cost``, with what
    ``litellm.register_model`` added in this process) or per-call prices in the judge's ``extra``."""
    if any(settings.extra.get(key) is not None for key in _CALL_PRICES):
        return True
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # seconds: only for a run with a budget

    litellm.suppress_debug_info = True  # no "Provider List" banner on stdout for an unknown model
    try:
        litellm.cost_per_token(model=settings.model, prompt_tokens=1, completion_tokens=1)
    except Exception:  # noqa: BLE001 - litellm's "not mapped" and "no provider" errors alike: no price
        return False
    return True


def refuse_unpriced(scorers: Iterable[Scorer], target: Target, options: RunOptions) -> None:
    """Before the run (nothing sent, nothing stored): with a budget, every model it calls must have a price,
    unless ``allow_unpriced`` (its requests then count nothing toward the spend).

    Raises:
        UnpricedModelError: one line naming the models and the two ways out.
    """
    if options.max_cost is None or options.allow_unpriced:
        return
    unpriced = sorted(name for name, settings in paid_models(scorers, target).items() if not model_priced(settings))
    if unpriced:
        raise UnpricedModelError(
            f"--max-cost {options.max_cost:g}: litellm has no price for {', '.join(unpriced)}, so its requests "
            "could not count toward the budget; give it a price (litellm.register_model, or input_cost_per_token "
            "in the judge's options) or add --allow-unpriced (allow_unpriced=True) to count it as free")


def next_budget(spend: float, budget: float, done: int, total: int) -> float:
    """A budget for the resume: the run's cost per finished cell so far times its cells, rounded up to a cent
    (at least the budget plus what it spent past it, and a cent more)."""
    estimate = spend / done * total if done else 2 * budget
    return math.ceil(max(estimate, spend + 0.01) * 100) / 100


def budget_line(result: Any, resume: str) -> str:
    """The line a run its budget stopped ends with: spend, budget, and ``resume`` (how to continue it)."""
    return (f"run {result.run_id} stopped at its budget: spent ${result.spend:.4f} of --max-cost "
            f"${result.max_cost:.4f}; its finished cells are stored, the rest are computed by: {resume}")


def cells_done(result: Any) -> tuple[int, int]:
    """(cells stored, cells of the run) from an EvalResult's summary."""
    scorers = result.summary["scorers"].values()
    done = sum(s["scored"] + s["skipped"] for s in scorers)
    return done, result.summary["totalItems"] * len(result.summary["scorers"])
