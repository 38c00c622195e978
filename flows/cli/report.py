"""`evalduck report RUN`: the run's self-contained HTML report (flows/report/html/). No prefect import here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from evalduck.flows.cli import app, fail
from evalduck.flows.cli.errors import label, value_error
from evalduck.flows.cli.results import _consoles, _store
from evalduck.flows.report.html import DEFAULT_LAST, write_report
from evalduck.flows.report.text import literal

__all__ = ("report", "ui_url")


def ui_url() -> str | None:
    """The Prefect UI the run's flow-run link points at: PREFECT_UI_URL, else PREFECT_API_URL without its
    `/api`, else the server this folder's runs record to (`.evalduck/serve.json`)."""
    if os.environ.get("PREFECT_UI_URL"):
        return os.environ["PREFECT_UI_URL"].rstrip("/")
    from evalduck.flows.local.install import ServeError, read_state, ui_url_for  # slow imports: only when asked

    if os.environ.get("PREFECT_API_URL"):
        return ui_url_for(os.environ["PREFECT_API_URL"])
    from evalduck.flows.local.folder import project_state_dir

    try:
        state = read_state(project_state_dir())
    except ServeError:
        return None
    return state.ui_url if state is not None else None


@app.command()
def report(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id, run name (its newest run), latest or previous")],
    against: Annotated[
        Optional[str],
        typer.Option(help="Baseline run to compare with (default: the previous completed run of the same name)"),
    ] = None,
    last: Annotated[int, typer.Option("--last", "-n", min=1, help="Runs of the name in the trend")] = DEFAULT_LAST,
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", help="HTML file to write (default: reports/<name>-<run id>.html beside "
                     "the results file)"),
    ] = None,
    open_page: Annotated[
        bool, typer.Option("--open", help="Then open it in the default web browser (BROWSER, else the system's)")
    ] = False,
) -> None:
    """Write RUN's report: one HTML file that opens offline (charts, trend, comparison, item table)."""
    if output is not None:
        if output.is_dir():
            fail(value_error(label(ctx, "output"), output, "is a folder; name the HTML file to write"), ctx)
        if not output.expanduser().absolute().parent.is_dir():
            fail(value_error(label(ctx, "output"), output, f"folder {output.expanduser().absolute().parent} does "
                             "not exist"), ctx)
    with _store(ctx) as store:
        needs_url = bool(store.run_record(run).flow_run_id)
        try:
            written = write_report(store, run, against=against, last=last,
                                   path=output.expanduser() if output else None, ui_url=ui_url() if needs_url else None)
        except OSError as exc:  # e.g. reports/ beside a results file on a read-only disk
            _consoles.err.print(literal(("error:", "red"), f" could not write the report ({exc.strerror or exc}: ",
                                        str(exc.filename or output), "). Pass --output FILE in a folder you can "
                                        "write."))
            raise typer.Exit(1) from None
    _consoles.out.print(literal("report of run ", written.run_id, ": ", written.path,
                                f" ({written.bytes / 1e6:.2f} MB, {written.seconds:.1f} s)"), soft_wrap=True)
    if open_page:
        _open(written.path)


def _open(path: Path) -> None:
    """The page in the user's browser (Python's webbrowser: BROWSER, else the desktop's); a machine without
    one gets a line saying so, not an error: the report is written."""
    import webbrowser

    url = path.resolve().as_uri()
    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        _consoles.err.print(literal("could not open a web browser here (set BROWSER); open ", url, " in one"),
                            soft_wrap=True)
