"""`evalduck run --max-cost USD` (issue 28) at the command's two ends: before Prefect starts, a model litellm
cannot price is refused (exit 1, one line) unless --allow-unpriced; after a run its budget stopped, one line
with the spend, the budget and the command that continues it (exit 1: the run is not complete)."""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from evalduck.flows.cli.errors import print_error
from evalduck.flows.cli.run_stops import resume_command
from evalduck.flows.report.text import literal

if TYPE_CHECKING:
    from evalduck.flows.config import EvalConfig

__all__ = ("check_budget", "end_over_budget", "with_max_cost")


def check_budget(err: Console, config: EvalConfig) -> None:
    """With --max-cost: every model the run calls has a price (flows/run/max_cost.py), checked as the flow
    checks it, before the server starts. Nothing to do without a budget (litellm is not imported)."""
    if config.max_cost is None or config.allow_unpriced:
        return
    from evalduck.flows.inputs.registry import build_scorers
    from evalduck.flows.inputs.targets import resolve_target
    from evalduck.flows.run.max_cost import UnpricedModelError, refuse_unpriced

    try:
        built, _ = build_scorers(config.scorers, judge_model=config.judge_model, judge_api_base=config.judge_api_base)
        target = resolve_target(config.target, system_prompt=config.target_system_prompt,
                                api_base=config.target_api_base)
    except ValueError:  # bad scorer options or target: the run reports them, as it always has
        return
    try:
        refuse_unpriced(built, target, config.options())
    except UnpricedModelError as exc:
        print_error(exc, err)
        raise typer.Exit(1) from None
    # A low estimate above the budget is refused by the run's own checks (flows/run/max_cost.py), in one line.


def with_max_cost(command: str, budget: float) -> str:
    """``command`` (a shell line) with its --max-cost set to ``budget`` (replaced, or added)."""
    words, out = iter(shlex.split(command)), []
    for word in words:
        if word == "--max-cost":
            next(words, None)
        elif not word.startswith("--max-cost="):
            out.append(word)
    return shlex.join([*out, "--max-cost", f"{budget:g}"])


def end_over_budget(err: Console, result: Any) -> None:
    """After the summary of a run its budget stopped: one line and exit 1; any other run: nothing."""
    from evalduck.flows.engine.spend import BUDGET_EXCEEDED
    from evalduck.flows.run.max_cost import budget_line, cells_done, next_budget

    if getattr(result, "status", None) != BUDGET_EXCEEDED or result.spend is None or result.max_cost is None:
        return
    budget = next_budget(result.spend, result.max_cost, *cells_done(result))
    resume = with_max_cost(resume_command(result.run_id), budget)
    err.print(literal(("stopped:", "yellow"), " ", budget_line(result, resume)), highlight=False)
    sys.stderr.flush()
    raise typer.Exit(1)
