"""A rich table fitted to the terminal's width without cutting an id: words wrap, free text folds, secondary
columns go first, and when even that is too wide each row becomes a block of `header: value` lines.

Rich alone shrinks every column evenly once wrapping is not enough, so at 100 columns two scorer ids read
`contex…` and could no longer be told apart. No prefect import here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

__all__ = ("PIPE_WIDTH", "console_width", "fit")

PIPE_WIDTH = 200  # off a terminal (a pipe, CI logs) tables get this many columns instead of rich's 80
FOLD_MIN = 16  # a free-text column ("fold": reasons, errors, paths) may be this narrow; longer words fold


def console_width(stream: IO[str]) -> int | None:
    """The width to give a Console on ``stream``: the terminal's (rich reads it, COLUMNS included), else
    ``PIPE_WIDTH``. COLUMNS alone is no terminal: a Python parent that imported readline exports it (80)."""
    return None if stream.isatty() else PIPE_WIDTH


def _name(column: Column) -> str:
    return str(column.header)


def _range(console: Console, column: Column) -> tuple[int, int]:
    """The narrowest and widest a column's content may be: never narrower than its longest word (an id is
    one word), except in a folding column, nor than all of it in a column that does not wrap."""
    low = high = 1
    for cell in [column.header, *column.cells]:
        m = Measurement.get(console, console.options, cell)
        low, high = max(low, m.minimum), max(high, m.maximum)
    if column.no_wrap:
        return high, high
    if column.overflow == "fold":
        return min(low, FOLD_MIN, high), high
    return low, high


def _overhead(table: Table, n: int) -> int:
    padding = table.padding[1] + table.padding[3]
    borders = ((2 if table.show_edge else 0) + n - 1) if table.box else 0
    return n * padding + borders


def _widths(ranges: list[tuple[int, int]], room: int) -> list[int]:
    """Each column its minimum, then the room left shared out evenly up to each column's maximum."""
    widths = [low for low, _ in ranges]
    left = room - sum(widths)
    while left > 0:
        growing = [k for k, (_, high) in enumerate(ranges) if widths[k] < high]
        if not growing:
            break
        share = max(1, left // len(growing))
        for k in growing:
            step = min(share, ranges[k][1] - widths[k], left)
            widths[k] += step
            left -= step
            if not left:
                break
    return widths


def fit(console: Console, table: Table, drop: Sequence[str] = ()) -> RenderableType:
    """``table`` laid out for ``console.width``: as it is when it fits; else its wrapping columns narrowed
    (never below their longest word); else the columns named in ``drop`` left out, first ones first, with a
    caption naming them; else one block per row."""
    width = console.width
    dropped: list[str] = []
    while True:
        columns = [c for c in table.columns if _name(c) not in dropped]
        ranges = [_range(console, c) for c in columns]
        room = width - _overhead(table, len(columns))
        if sum(high for _, high in ranges) <= room:
            break
        if sum(low for low, _ in ranges) <= room:
            for column, w, (_, high) in zip(columns, _widths(ranges, room), ranges, strict=True):
                if w < high:
                    column.width = w
            break
        left = [name for name in drop if name not in dropped and any(_name(c) == name for c in columns)]
        if not left:
            return _blocks(table)
        dropped.append(left[0])
    if dropped:
        table.columns = columns
        for index, column in enumerate(columns):  # rich pads the first and last column by their index
            column._index = index
        note = f"left out at {width} columns: {', '.join(dropped)} (a wider terminal shows them)"
        table.caption = note if table.caption is None else f"{table.caption}\n{note}"
    return table


def _blocks(table: Table) -> RenderableType:
    """Each row as its first cell on a line, then its other cells as `header: value`, wrapped."""
    columns = table.columns
    parts: list[RenderableType] = [] if table.title is None else [Text.assemble(table.title, style="italic")]
    for cells in zip(*(c.cells for c in columns), strict=True):
        parts.append(Text.assemble(cells[0], style="bold"))
        line = Text("  ")
        for k, (column, cell) in enumerate(zip(columns[1:], cells[1:], strict=True)):
            line.append_text(Text.assemble(("; " if k else ""), (_name(column) + ": ", "dim"), cell))
        parts.append(line)
    if table.caption is not None:
        parts.append(Text.assemble(table.caption, style="dim"))
    return Group(*parts)
