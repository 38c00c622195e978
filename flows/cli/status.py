"""`evalduck status`: what runs for this folder (flows/local/install/status.py), with memory and idle time."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from evalduck.flows.cli import app
from evalduck.flows.cli.serve import StateDir
from evalduck.flows.local.folder import project_state_dir
from evalduck.flows.report.text import literal

_console = Console(highlight=False, soft_wrap=True)


@app.command()
def status(state_dir: StateDir = None) -> None:
    """List the processes that run for this folder (server, warm starter, renderer, worker, idle watcher):
    pid, resident memory, the UI's URL, and how long until they stop by themselves when idle."""
    from evalduck.flows.local.install import ServeError
    from evalduck.flows.local.install.status import folder_status

    folder = (state_dir or project_state_dir()).resolve()
    try:
        found = folder_status(folder)
    except ServeError as exc:
        _console.print(literal("evalduck status: ", str(exc), style="red", multiline=True))
        raise typer.Exit(1) from exc
    if found.state is None:
        _console.print(literal("Nothing runs for this folder (no ", str(folder / "serve.json"), "); the next "
                               "`evalduck run` starts its server."))
        return
    table = Table(title=literal("evalduck processes of ", str(folder.parent)), title_justify="left")
    for column in ("process", "pid", "RSS MB", ""):
        table.add_column(column, justify="right" if column in ("pid", "RSS MB") else "left")
    total = 0.0
    for process in found.processes:
        rss = "–" if process.rss_mb is None else f"{process.rss_mb:.0f}"
        total += process.rss_mb or 0.0
        table.add_row(process.role, str(process.pid), rss, literal(process.note))
    table.add_row("all", "", f"{total:.0f}", "")
    _console.print(table)
    _console.print(literal(found.idle_line))
