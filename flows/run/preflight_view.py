"""A preflight as a person reads it (a rich table and notes) and as a script reads it (JSON): what
``evalduck run --dry-run`` prints, and ``run_evals(..., dry_run=True)`` unless ``quiet``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from evalduck.flows.config import RunOptions
from evalduck.flows.run.preflight import Preflight, PreflightLine, preflight

__all__ = ("dry_run", "preflight_json", "print_preflight")


def _tokens(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _usd(value: float) -> str:
    return f"${value:.4f}" if value < 100 else f"${value:,.2f}"


def _cost(line: PreflightLine) -> str:
    if line.kind == "skipped" or line.kind == "code":
        return "–"
    if line.price == "no model":
        return "n/a (a function)"
    if line.cost_low is None or line.cost_high is None:
        return "unknown price"
    return f"{_usd(line.cost_low)}-{_usd(line.cost_high)}"


def _table(pre: Preflight) -> Table:
    table = Table(title="Dry run: what the run would ask (nothing was sent or stored)", title_justify="left")
    for header in ("", "model", "requests", "cached", "to send", "prompt tokens", "completion tokens", "cost"):
        table.add_column(header, justify="left" if header in ("", "model") else "right")
    for line in pre.lines:
        if line.kind in ("skipped", "code"):
            table.add_row(line.name, line.kind, "0", "", "", "", "", "–", style="dim")
            continue
        table.add_row(line.name, line.model or "–", f"{line.requests:,}", f"{line.cached:,}", f"{line.to_send:,}",
                      _tokens(line.prompt_tokens) + ("*" if line.prompts_estimated else ""),
                      _tokens(line.completion_tokens), _cost(line))
    total = f"{_usd(pre.cost_low)}-{_usd(pre.cost_high)}" + (" + unknown" if pre.unknown_price else "")
    prompt = sum(line.prompt_tokens or 0 for line in pre.lines)
    completion = sum(line.completion_tokens or 0 for line in pre.lines)
    table.add_row("total", "", f"{pre.requests:,}", f"{pre.cached:,}", f"{pre.requests - pre.cached:,}",
                  f"{prompt:,}", f"{completion:,}", total, style="bold")
    return table


def _notes(pre: Preflight) -> list[str]:
    cache = "--no-cache: nothing is read from the step cache" if pre.refresh else f"step cache {pre.cache_dir}"
    notes = [f"{pre.items:,} item(s), {pre.cells:,} cell(s)" + (f" left in run {pre.resume}" if pre.resume else "")
             + f"; {cache}; results file {pre.db}"]
    for line in pre.lines:
        if line.prompts_estimated:
            notes.append(f"* {line.name}: {line.prompts_estimated:,} prompt(s) depend on answers not cached yet; "
                         "estimated from the same step's other prompts (docs/cost.md)")
        if line.completion_source and line.to_send:
            notes.append(f"{line.name}: completion tokens from {line.completion_source}")
        if line.note:
            notes.append(f"{line.name}: {line.note}")
    if pre.unknown_price:
        notes.append(f"unknown price (not in litellm's price map, left out of the total): {', '.join(pre.unknown_price)}")
    notes.append("cost: low = the requests to send at the low completion estimate; high = at the high one "
                 "(docs/cost.md)")
    return notes


def print_preflight(console: Console, pre: Preflight) -> None:
    """The table, then its notes (where each estimate comes from)."""
    console.print(_table(pre))
    for note in _notes(pre):
        console.print(note, style="dim", markup=False, highlight=False)


def preflight_json(pre: Preflight) -> str:
    """The preflight as JSON (``--format json``): the model's fields, the computed totals included."""
    return json.dumps(pre.model_dump(mode="json"), indent=2)


def dry_run(data: Any, scorers: Sequence[Any], target: Any, options: RunOptions, *, quiet: bool) -> Preflight:
    """``run_evals(..., dry_run=True)``: the preflight, shown as the CLI shows it unless ``quiet``."""
    found = preflight(data=data, scorers=scorers, target=target, options=options)
    if not quiet:
        print_preflight(Console(), found)
    return found
