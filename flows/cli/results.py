"""What the results commands (`runs`, `show`, `compare`, `sql`, `report`) share: consoles made at first use,
the store opened for reading with its errors as usage errors, and how a number or a time is printed.

The commands themselves are in runs.py (runs, show), compare.py and sql.py. No prefect import here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from evalduck.flows.cli import db_path, fail
from evalduck.flows.cli.errors import USAGE_ERROR, label, print_error, value_error
from evalduck.flows.report.fit import console_width
from evalduck.flows.report.text import literal
from evalduck.flows.store import Store, StoreError

__all__ = ("_consoles", "_store", "_num", "_when")

class _Consoles:
    """Consoles made at first use, so they write to the sys.stdout/stderr of the moment (tests swap them),
    tables as wide as flows/report/fit.py's `console_width` says; messages on stderr one line each, as every
    command's (a pipe or a log keeps them whole for grep, whatever the length of a path in them)."""

    @property
    def out(self) -> Console:
        return Console(soft_wrap=False, width=console_width(sys.stdout))

    @property
    def err(self) -> Console:
        return Console(stderr=True, soft_wrap=True)


_consoles = _Consoles()

@contextmanager
def _store(ctx: typer.Context, *, reader: bool = True) -> Iterator[Store]:
    """The store, with store errors (unknown run, locked file, newer schema) turned into exit status 2. A
    file that does not exist is a usage error too: reading must not leave an empty results file behind (a
    mistyped --db made one). A file that cannot be written here is read read-only (`reader`, Store)."""
    path = db_path(ctx)
    if isinstance(path, Path) and not path.expanduser().exists():
        fail(value_error(label(ctx, "db"), path, "no such results file (`evalduck run` creates it; check --db "
                                                 "and EVALDUCK_DB)"), ctx)
    try:
        store = Store(path, reader=reader)
        if store.left_running:
            _consoles.err.print(literal(
                "note: ", store.path, " cannot be written here, so runs whose process is gone still show `running`: ",
                ", ".join(store.left_running), style="dim"))
        yield store
    except StoreError as exc:  # here a usage error of --db, where a run's store error is a failure (exit_code)
        print_error(exc, _consoles.err)
        raise typer.Exit(USAGE_ERROR) from exc


def _num(value: Any, digits: int = 3, signed: bool = False) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return str(value)


def _when(value: datetime | None) -> str:
    return "–" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")
