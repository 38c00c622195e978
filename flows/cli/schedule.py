"""`evalduck schedule enable|disable NAME`: a deployment's schedules on or off, on this folder's server
(PREFECT_API_URL when set, else the one `evalduck serve` or a run recorded in the project's .evalduck/)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from evalduck.flows.cli import app
from evalduck.flows.cli.errors import UsageErrorsGroup
from evalduck.flows.report.text import literal

__all__ = ("schedule_app",)

schedule_app = typer.Typer(
    name="schedule", cls=UsageErrorsGroup, no_args_is_help=True,
    help="Switch a deployment's schedules on or off on this folder's Prefect server (init writes them off).",
)
app.add_typer(schedule_app)

_console = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)

Name = Annotated[str, typer.Argument(help="The deployment, e.g. nightly (or flow/deployment).", show_default=False)]


def _switch(name: str, active: bool) -> None:
    from evalduck.flows.local.folder import project_state_dir
    from evalduck.flows.local.install import client_auth, configured_api_url, read_state
    from evalduck.flows.local.server import recorded_server
    from evalduck.flows.project.schedules import switch_schedules

    api_url, auth = configured_api_url(), None
    if api_url is None:
        state_dir = project_state_dir()
        state = recorded_server(state_dir) if read_state(state_dir) is not None else None  # makes no folder
        if state is None:
            _err.print(literal(("error:", "red"), " no Prefect server runs for this folder (", str(state_dir),
                               "): start one with `evalduck serve`, or name one with PREFECT_API_URL"))
            raise typer.Exit(1)
        api_url, auth = state.api_url, state.auth
    with client_auth(auth):  # a ScheduleError is the family's: `error: ...`, exit 1 (flows/cli/errors.py)
        done = switch_schedules(api_url, name, active)
    word = "on" if done.active else "off"
    _console.print(literal(done.deployment, ": schedule ", word, " (", "; ".join(done.schedules), ") on ", api_url))


@schedule_app.command()
def enable(name: Name) -> None:
    """Switch the deployment's schedules on: the scheduler starts creating its runs."""
    _switch(name, True)


@schedule_app.command()
def disable(name: Name) -> None:
    """Switch the deployment's schedules off: no new runs are scheduled."""
    _switch(name, False)
