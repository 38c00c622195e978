"""`evalduck sql QUERY`: SQL on the results file, printed as a table, CSV or JSON; read-only unless
`--write`. No prefect import here."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import duckdb
import typer
from rich.table import Table

from evalduck.flows.cli import app, fail
from evalduck.flows.cli.errors import USAGE_ERROR
from evalduck.flows.cli.results import _consoles, _num, _store
from evalduck.flows.report.fit import fit
from evalduck.flows.report.text import literal

__all__ = ("sql",)


@app.command()
def sql(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="SQL; the file's views and macros are available (docs/sql.md)")],
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", help="A value bound to the next ? or $n (repeatable)")
    ] = None,
    output: Annotated[str, typer.Option("--format", "-f", help="table, csv or json")] = "table",
    write: Annotated[bool, typer.Option("--write", help="Open read-write (default: read-only)")] = False,
) -> None:
    """Run SQL on the results file (read-only unless --write)."""
    if output not in ("table", "csv", "json"):
        fail(f"--format must be one of table, csv or json, got {output!r}", ctx)
    with _store(ctx, reader=not write) as store:
        try:
            result = store.sql(query, list(param) if param else None, write=write)
        except duckdb.Error as exc:
            _consoles.err.print(literal("error: ", str(exc), multiline=True))
            raise typer.Exit(USAGE_ERROR) from exc
    if output == "json":
        sys.stdout.write(json.dumps(result.records(), default=str, ensure_ascii=False) + "\n")
    elif output == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(result.columns)
        writer.writerows(result.rows)
    else:
        _print_table(result.columns, result.rows)


def _print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    table = Table()
    for column in columns:
        table.add_column(literal(column), overflow="fold")
    for row in rows:
        table.add_row(*(literal("NULL" if v is None else _num(v, 4) if isinstance(v, float) else v, multiline=True)
                        for v in row))
    out = _consoles.out
    out.print(fit(out, table))
    out.print(f"{len(rows)} row(s)", highlight=False)
