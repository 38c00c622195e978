"""The `evalduck` command line: one typer app, one module per group of commands.

Adding commands: write `flows/cli/<name>.py` that does `from evalduck.flows.cli import app` and decorates its
functions with `@app.command()`, then add one import line at the bottom of this file. Keep heavy
imports (prefect, litellm) inside the command functions, so `evalduck sql/runs/show/compare` start fast.
Commands reach the database path with `db_path(ctx)` (the global `--db`, else EVALDUCK_DB, else the
project file's `db`, else evals.duckdb at the project root: flows/project/root.py). A bad option value is `fail(message, ctx)`: exit 2 with the message as `error: ...`, the form
every usage error takes (flows/cli/errors.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalduck.flows.cli.errors import UsageErrorsGroup, fail, label, value_error
from evalduck.flows.project.defaults import default_db_path
from evalduck.flows.settings import DB_ENV, DEFAULT_DB_FILE, DUCKLAKE_PREFIX

__all__ = ("app", "main", "db_path", "fail")

app = typer.Typer(
    name="evalduck",
    cls=UsageErrorsGroup,
    help="Evaluations of LLM applications as Prefect flows, with every result in DuckDB.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# Commands that make a project rather than run in one: a broken project file above is not theirs to report.
_OUTSIDE_PROJECTS = frozenset({"init"})


@app.callback()
def _global_options(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option("--db", envvar=DB_ENV, help=f"DuckDB results file, or a shared store's ducklake:postgres://... URL "
                     f"(docs/scale-out.md) [default: {DB_ENV}, else the project file's db, else {DEFAULT_DB_FILE} at "
                     "the project root]"),
    ] = None,
) -> None:
    if ctx.invoked_subcommand in _OUTSIDE_PROJECTS:
        ctx.obj = {"db": db}
        return
    from evalduck.flows.project.file import ProjectFileError, file_defaults

    try:  # the project file (flows/project/root.py), checked once for every command: a bad key is one line
        file_defaults()
    except ProjectFileError as exc:
        fail(str(exc), ctx)
    ctx.obj = {"db": db if db is not None else default_db_path()}


def db_path(ctx: typer.Context) -> Path | str:
    """The results file chosen by `--db`, EVALDUCK_DB or the default, for any command; a shared store's
    `ducklake:` URL as given (flows/store/target.py).

    A usage error (exit 2) when it names a folder, or a file in a folder that does not exist: the file
    itself is created on first use, its folder never is.
    """
    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    raw = obj.get("db") or default_db_path()
    if str(raw).startswith(DUCKLAKE_PREFIX):
        return str(raw)
    path = Path(raw)
    full = path.expanduser().absolute()
    if full.is_dir():
        fail(value_error(label(ctx, "db"), path, f"is a folder, not a DuckDB file (e.g. {full / DEFAULT_DB_FILE})"), ctx)
    if not full.parent.is_dir():
        fail(value_error(label(ctx, "db"), path, f"folder {full.parent} does not exist (create it, or name a file "
                         "in an existing folder)"), ctx)
    return path


def main() -> None:
    """The CLI in this process: what the `evalduck` script (flows/launch.py) runs when the command does not
    go to the folder's warm starter, and what a child forked by the starter runs."""
    app()


# Command modules register themselves on import (one line each; keep this block last), in the order
# `evalduck --help` lists them: hence no import sorting here.
# isort: off
from evalduck.flows.cli import runs  # noqa: E402,F401
from evalduck.flows.cli import compare  # noqa: E402,F401
from evalduck.flows.cli import sql  # noqa: E402,F401
from evalduck.flows.cli import report  # noqa: E402,F401
from evalduck.flows.cli import calibrate  # noqa: E402,F401
from evalduck.flows.cli import labelling  # noqa: E402,F401
from evalduck.flows.cli import sweep  # noqa: E402,F401
from evalduck.flows.cli import run  # noqa: E402,F401
from evalduck.flows.cli import serve  # noqa: E402,F401
from evalduck.flows.cli import init  # noqa: E402,F401
from evalduck.flows.cli import schedule  # noqa: E402,F401
from evalduck.flows.cli import status  # noqa: E402,F401
# isort: on
