"""`evalduck run ... --dry-run`: the run's preflight (flows/run/preflight.py) instead of the run. Everything the run
checks is checked, then the table (or `--format json`) says per scorer and for the target what it would ask,
what the step cache answers, the tokens and the cost. No Prefect server is started, no flow run made, nothing
sent or stored (docs/cost.md)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from evalduck.errors import EvalduckError
from evalduck.flows.cli.errors import FAILURE, exit_code, fail
from evalduck.flows.cli.run_checks import check_usage
from evalduck.flows.cli.run_stops import stop
from evalduck.flows.report.fit import console_width

if TYPE_CHECKING:
    from evalduck.flows.config import EvalConfig

__all__ = ("DryRunOption", "FormatOption", "FORMATS", "show_preflight")

FORMATS = ("table", "json")
DryRunOption = Annotated[bool, typer.Option(
    "--dry-run", help="Check everything and print what the run would ask, what the step cache already holds, "
    "its tokens and cost (docs/cost.md); nothing is sent or stored, no flow run is made.")]
FormatOption = Annotated[str, typer.Option("--format", help="With --dry-run: table, or json for scripts.")]


def show_preflight(ctx: typer.Context, config: EvalConfig, output_format: str, asked: bool) -> None:
    """The preflight of the run ``config`` describes, printed; ``asked``: --dry-run was given (--format alone
    is a usage error). Errors end the command as the run's would (exit_code)."""
    if output_format not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, got {output_format!r}", ctx)
    if not asked:
        fail("--format applies to --dry-run's output: add --dry-run, or leave --format out", ctx)
    # The resumed run is checked by the preflight itself, on a read-only opening of the results file.
    check_usage(ctx, config.model_copy(update={"resume": None}))
    from evalduck.flows.run.preflight import preflight
    from evalduck.flows.run.preflight_view import preflight_json, print_preflight

    err = Console(stderr=True, soft_wrap=True)
    try:
        found = preflight(data=config.dataset, scorers=list(config.scorers), target=config.target,
                          options=config.options())
    except EvalduckError as exc:
        stop(err, exc, exit_code(exc))
    except ValueError as exc:  # e.g. a scorer's bad options, as the run says them
        stop(err, exc, FAILURE)
    if output_format == "json":
        sys.stdout.write(preflight_json(found) + "\n")
    else:
        print_preflight(Console(width=console_width(sys.stdout)), found)
