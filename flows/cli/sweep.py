"""`evalduck sweep SWEEP.yaml`: every candidate of a sweep file, one eval run each, as one parent flow run; and
`evalduck leaderboard [SWEEP]`: its candidates against its baseline (docs/sweeps.md). Prefect is imported
inside `sweep` only: the leaderboard starts as fast as the other results commands."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from evalduck.flows.cli import app, db_path, fail
from evalduck.flows.cli.errors import label, value_error
from evalduck.flows.cli.results import _store
from evalduck.flows.config import RunOptions
from evalduck.flows.inputs.sweeps import SweepFileError, load_sweep, with_run_options
from evalduck.flows.report.fit import console_width, fit
from evalduck.flows.report.leaderboard import Row
from evalduck.flows.report.leaderboard_text import delta_text, mean_text, to_csv, to_json, to_markdown
from evalduck.flows.report.text import literal

__all__ = ("leaderboard_command", "sweep")

_FORMATS = ("table", "markdown", "csv", "json", "html")


def _help(field: str) -> str:
    """A run option's help, from its one description (RunOptions), as the sweep overrides it."""
    shared = " One budget for all the sweep's runs at once." if field in ("concurrency", "judge_rpm") else ""
    return f"{RunOptions.model_fields[field].description}{shared} Over the file's base."


@app.command()
def sweep(
    ctx: typer.Context,
    sweep_file: Annotated[Path, typer.Argument(metavar="SWEEP", help="The sweep file (docs/sweeps.md)")],
    name: Annotated[Optional[str], typer.Option(help="The sweep's name [default: the file's `name:`, else its "
                                                "stem]")] = None,
    resume: Annotated[Optional[str], typer.Option(help="Finish this sweep (id, name or `latest`): its completed "
                                                  "runs are kept, the others run or resume")] = None,
    concurrency: Annotated[Optional[int], typer.Option(min=1, max=256, help=_help("concurrency"))] = None,
    judge_rpm: Annotated[Optional[float], typer.Option(min=0.001, help=_help("judge_rpm"))] = None,
    runner: Annotated[Optional[str], typer.Option(help=_help("runner"))] = None,
    dask_address: Annotated[Optional[str], typer.Option(help=_help("dask_address"))] = None,
    workers: Annotated[Optional[int], typer.Option(min=1, max=64, help=_help("workers"))] = None,
    ephemeral: Annotated[bool, typer.Option("--ephemeral", help="Use a temporary Prefect server, as in CI")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show Prefect's own log lines")] = False,
) -> None:
    """Run every candidate of a SWEEP file (one eval run each, side by side under one concurrency and judge rate,
    sharing the step cache), then print the leaderboard against its baseline."""
    from evalduck.flows.cli.run import prepare_process

    prepare_process(verbose)
    err = Console(stderr=True, soft_wrap=True)
    out = Console(width=console_width(sys.stdout))
    options = {k: v for k, v in (("concurrency", concurrency), ("judge_rpm", judge_rpm), ("runner", runner),
                                 ("dask_address", dask_address), ("workers", workers)) if v is not None}
    try:  # every problem of the file, by line, and of the options, before a server starts or anything runs
        checked = with_run_options(load_sweep(sweep_file), options, lambda field: "--" + field.replace("_", "-"))
    except SweepFileError as exc:
        err.print(literal(("error:", "red"), " ", str(exc), multiline=True))
        raise typer.Exit(2) from None
    err.print(literal(f"sweep {name or checked.name}: {len(checked.candidates)} candidate(s) x {checked.repeat} "
                      f"run(s), baseline {checked.baseline.label}", style="dim"))
    result = _run_on_server(ctx, err, str(sweep_file), name, resume, ephemeral, options)
    from evalduck.flows.report.sweep_board import sweep_rows

    with _store(ctx) as store:
        rows = sweep_rows(store, result.sweep_id, result.baseline, None)
    out.print(fit(out, _table(rows, result.name)))
    ref = result.sweep_id[:8]
    if result.report:
        out.print(literal("report: ", result.report, style="dim"), soft_wrap=True)
    out.print(literal(f"sweep {result.sweep_id} {result.status}; results in ", result.db, "; try `evalduck "
                      f"leaderboard {ref}`", style="dim"), soft_wrap=True)
    if result.status != "completed":
        raise typer.Exit(1)


def _run_on_server(ctx: typer.Context, err: Console, path: str, name: str | None, resume: str | None,
                   ephemeral: bool, options: dict[str, Any]) -> Any:
    """The sweep flow on the server `evalduck run` would use (flows/cli/run.py), with its progress lines."""
    from evalduck.flows.cli.run import api_settings, server_for_run
    from evalduck.flows.run.progress import RichRunBars, use_sink
    from evalduck.flows.run.scope import heartbeat_settings
    from evalduck.flows.store import StoreError
    from evalduck.flows.store.sweeps import UnknownSweepError
    from evalduck.flows.sweep_flow import run_sweep

    with contextlib.ExitStack() as stack:
        api_url, lasting, ours, auth = server_for_run(err, ephemeral, stack)
        with RichRunBars(err) as bars, use_sink(bars), api_settings(api_url, lasting, auth), heartbeat_settings(own_server=ours):
            try:
                return run_sweep(path, name=name, resume=resume, db=str(db_path(ctx)), options=options or None)
            except UnknownSweepError as exc:
                fail(value_error(label(ctx, "resume"), resume, str(exc).split(": ", 1)[-1]), ctx)
            except KeyboardInterrupt:
                err.print(literal("sweep cancelled: `evalduck sweep ", path, " --resume latest` finishes it",
                                  style="yellow"))
                raise typer.Exit(130) from None
            except StoreError as exc:
                err.print(literal(("error:", "red"), " ", str(exc), multiline=True))
                raise typer.Exit(1) from None


def _table(rows: list[Row], title: str) -> Table:
    table = Table(title=f"leaderboard: {title}", title_justify="left")
    timed = any(row.latency_p50 is not None for row in rows)  # a column only when the target was timed
    for column in ("scorer", "candidate", "mean [95% CI]", "delta vs baseline [Holm CI]", "win/tie/loss", "tokens",
                   "cost", *(("latency p50/p95",) if timed else ())):
        table.add_column(column, overflow="fold")
    for row in rows:
        d = row.delta
        latency = (f"{row.latency_p50:.2f}/{row.latency_p95:.2f}s" if row.latency_p50 is not None
                   and row.latency_p95 is not None else "")
        table.add_row(row.scorer, ("* " if row.best else "") + row.candidate, mean_text(row, missing="–"),
                      delta_text(row), f"{d.wins}/{d.ties}/{d.losses}" if d else "", f"{row.judge_tokens:,}",
                      "unknown" if row.cost is None else f"${row.cost:.4f}", *((latency,) if timed else ()))
    return table


@app.command("leaderboard")
def leaderboard_command(
    ctx: typer.Context,
    sweep: Annotated[str, typer.Argument(metavar="[SWEEP]", help="A sweep's id, id prefix or name")] = "latest",
    by: Annotated[Optional[str], typer.Option(help="The scorer to rank by (listed first)")] = None,
    output_format: Annotated[str, typer.Option("--format", help=f"One of {', '.join(_FORMATS)}")] = "table",
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="The file to write (html: default "
                                                   "reports/sweep-<name>-<id>.html beside the results file; "
                                                   "markdown, csv, json: default stdout)")] = None,
) -> None:
    """A sweep's candidates against its baseline: means, paired deltas with Holm-adjusted intervals, win/tie/loss,
    tokens and cost per scorer, best first (`*`); `--format html` writes the sweep's report and prints its path."""
    from evalduck.flows.report.sweep_board import sweep_rows
    from evalduck.flows.store.sweeps import UnknownSweepError, resolve_sweep

    if output_format not in _FORMATS:
        fail(value_error(label(ctx, "output_format"), output_format, f"not one of {', '.join(_FORMATS)}"), ctx)
    where = output.expanduser().absolute() if output is not None else None
    if where is not None and (output_format == "table" or where.is_dir() or not where.parent.is_dir()):
        why = ("needs --format html, markdown, csv or json" if output_format == "table" else "is a folder; name the "
               "file to write" if where.is_dir() else f"folder {where.parent} does not exist")
        fail(value_error(label(ctx, "output"), output, why), ctx)
    with _store(ctx) as store:
        try:
            record = resolve_sweep(store, sweep)
        except UnknownSweepError as exc:
            fail(value_error(label(ctx, "sweep"), sweep, str(exc).split(": ", 2)[-1]), ctx)
        try:
            rows = sweep_rows(store, record["sweep_id"], record["baseline"], by)
        except ValueError as exc:
            fail(value_error(label(ctx, "by"), by, str(exc)), ctx)
        if output_format == "html":
            from evalduck.flows.cli.sweep_report import write_html

            write_html(store, record, where, by)
            return
    if output_format == "table":
        out = Console(width=console_width(sys.stdout))
        out.print(fit(out, _table(rows, f"{record['name']} ({record['sweep_id'][:8]}, {record['status']})")))
        return
    text = {"markdown": to_markdown, "csv": to_csv}.get(output_format)
    shown = text(rows) if text else to_json(rows, sweep_id=record["sweep_id"], name=record["name"],
                                            baseline=record["baseline"], status=record["status"])
    if where is None:
        sys.stdout.write(shown)
    else:
        where.write_text(shown, encoding="utf-8")
