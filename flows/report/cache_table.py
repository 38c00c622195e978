"""The ``--explain-cache`` table: per step, its cache hits and misses, and what changed in the missed keys,
items counted together (one row per step, never one per item). No prefect import here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Column, Table

from evalduck.flows.report.fit import fit
from evalduck.flows.report.text import literal

__all__ = ("cache_table",)


def cache_table(lines: Sequence[Mapping[str, Any]], console: Console) -> RenderableType:
    """``EvalResult.cache`` as a table as wide as ``console``: e.g. ``limited.generate_score  0  4  code
    (my_evals.py): 4``; a step without misses has an empty last column."""
    table = Table(Column("step", no_wrap=False), Column("hits", justify="right", no_wrap=True),
                  Column("misses", justify="right", no_wrap=True), Column("what changed (items)", overflow="fold"),
                  title=literal("step cache (--explain-cache)", style="table.title"), title_justify="left")
    for line in lines:
        why = "\n".join(f"{reason}: {count}" for reason, count in line["why"].items())
        table.add_row(literal(line["step"]), str(line["hits"]), str(line["misses"]), literal(why, multiline=True))
    return fit(console, table)
