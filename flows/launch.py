"""The `evalduck` command (console script): a thin client of the folder's warm starter for `evalduck run`,
the full CLI in this process otherwise.

Only the standard library is imported before the choice: the CLI's own imports (typer, rich, pydantic,
DuckDB) and Prefect's cost seconds (docs/benchmarks-history.md, 'Runs forked from a warm starter'), and a
run handed to the warm starter needs none of them here.
`evalduck run` goes to the starter unless it is ephemeral (CI, --ephemeral, EVALDUCK_EPHEMERAL=1); without
a starter, or when it refuses, the command runs here exactly as before (flows/local/warm/client.py).
"""

from __future__ import annotations

import sys

from evalduck.flows.local.folder import ephemeral, project_state_dir, running_here

__all__ = ("main", "command_of")

_OPTIONS_WITH_VALUE = frozenset({"--db"})  # the CLI's global options that take a value


def command_of(args: list[str]) -> str | None:
    """The subcommand named by ``args`` (after the global options), if any."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _OPTIONS_WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def main() -> None:
    """`evalduck ...`: a run through the folder's warm starter when it takes it, else the CLI here."""
    args = sys.argv[1:]
    if command_of(args) == "run" and "--ephemeral" not in args and not ephemeral():
        from evalduck.flows.local.warm.client import exit_like, run_via_starter

        # Held while the run goes, forked or here: the folder's idle watcher never stops its server under it.
        with running_here(project_state_dir()):
            code = run_via_starter("cli", args)
            if code is None:
                _cli()
        if code is not None:
            exit_like(code)
        return
    _cli()


def _cli() -> None:
    from evalduck.flows.cli import main as cli_main

    cli_main()
