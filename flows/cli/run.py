"""`evalduck run DATASET ...`: the eval flow from the terminal, with a progress bar and a summary table.

Runs the same flow a deployment runs (`run_eval_config`), in Prefect's local mode when PREFECT_API_URL is
unset and against that server when it is set. Prefect is imported inside the command, so the results
commands start fast.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console

from evalduck.errors import EvalduckError
from evalduck.flows.cli import app, db_path
from evalduck.flows.cli.errors import FAILURE, config_error, exit_code
from evalduck.flows.cli.run_budget import check_budget, end_over_budget
from evalduck.flows.cli.run_checks import calls_models, check_usage
from evalduck.flows.cli.run_dry import DryRunOption, FormatOption, show_preflight
from evalduck.flows.cli.run_stops import (
    Terminated,
    disk_error,
    lock_error,
    sigterm_as_interrupt,
    stop,
    stop_disk,
    stop_locked,
)
from evalduck.flows.config import DEFAULT_SCORERS, MAX_JUDGE_SAMPLES, SCORER_ID_HELP
from evalduck.flows.report.fit import console_width
from evalduck.flows.report.summary import print_result
from evalduck.flows.report.text import literal

if TYPE_CHECKING:
    from evalduck.flows.config import EvalConfig

__all__ = ("api_settings", "prepare_process", "run", "server_for_run")


_PARAM_OF_FIELD = {"scorers": "scorer", "target_system_prompt": "system_prompt", "refresh": "no_cache",
                   "target_timeout_s": "target_timeout", "judge_timeout_s": "judge_timeout"}
# Options of `run` that are no EvalConfig field: how the terminal shows the run, which server records it.
_NOT_CONFIG = frozenset({"verbose", "ephemeral", "dry_run", "output_format"})


def server_for_run(err: Console, flag: bool, stack: contextlib.ExitStack) -> tuple[str, bool, bool, str | None]:
    """The API URL of the server this run records to (see flows/local/server.py for the order), whether it
    outlives the run (so its flow run page is worth printing), whether evalduck started it (no heartbeats
    there, flows/run/scope.py) and the folder server's credentials (flows/local/install/credentials.py), for ``api_settings``;
    says which in one line."""
    from evalduck.flows.local.install import ServeError, answers, configured_api_url
    from evalduck.flows.local.server import (
        ephemeral,
        local_server,
        project_state_dir,
        run_scoped_server,
    )

    configured = configured_api_url()
    if configured:
        if not answers(configured):  # before the run: Prefect would retry for seconds, then fail in tracebacks
            err.print(literal(("error:", "red"), " nothing answers at PREFECT_API_URL=", configured, " (from the "
                              "environment or the active Prefect profile): start that server, or unset it to use "
                              "this folder's local server; nothing was run", multiline=True))
            raise typer.Exit(1)
        err.print(literal("Prefect: server ", configured, " (PREFECT_API_URL)", style="dim"))
        return configured, True, False, None
    try:
        if ephemeral(flag):
            err.print("[dim]Prefect: a temporary server for this run (--ephemeral, EVALDUCK_EPHEMERAL or CI)[/dim]")
            return stack.enter_context(run_scoped_server()), False, True, None
        state = local_server(project_state_dir(), say=lambda line: err.print(literal(line, multiline=True)))
    except ServeError as exc:
        err.print(literal(("error:", "red"), " could not start a local Prefect server: ", str(exc), multiline=True))
        raise typer.Exit(1) from None
    err.print(literal("Prefect: server ", state.api_url, " (this folder's; UI at ", state.ui_url, ")", style="dim"))
    return state.api_url, True, True, state.auth


def api_settings(api_url: str, lasting: bool, auth: str | None = None) -> Any:
    """Prefect's settings pointed at ``api_url`` for the run, with ``auth`` as its credentials when given
    (environment changes after Prefect's import are not seen). One ``temporary_settings``, since each costs
    time (docs/benchmarks.md, section 'Later demo runs after issue 23's server lock, auth and source digests').
    A server that ends with the run (``lasting`` false: --ephemeral, CI) has no UI and is gone when its report
    is read, so the UI URL is left empty: the report shows the flow run's id, not a dead link."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, PREFECT_UI_URL, temporary_settings

    return temporary_settings(updates={PREFECT_API_URL: api_url, **({} if lasting else {PREFECT_UI_URL: ""}),
                                       **({PREFECT_API_AUTH_STRING: auth} if auth else {})})


@app.command()
def run(
    ctx: typer.Context,
    dataset: Annotated[
        Optional[Path],
        typer.Argument(help="Dataset file: .jsonl, .json, .csv or .parquet [default: the project file's dataset].",
                       show_default=False),
    ] = None,
    scorer: Annotated[
        Optional[list[str]],
        typer.Option("--scorer", "-s", help=f"Scorer (repeatable). {SCORER_ID_HELP} Default: the three seeds "
                     f"({', '.join(DEFAULT_SCORERS)})."),
    ] = None,
    target: Annotated[
        Optional[str],
        typer.Option(help="'module:function' or 'model:<litellm model>'; default: score each item's output."),
    ] = None,
    system_prompt: Annotated[Optional[str], typer.Option(help="System prompt for a 'model:' target.")] = None,
    target_api_base: Annotated[
        Optional[str], typer.Option(help="OpenAI-compatible server for a 'model:' target (its api_base).")
    ] = None,
    target_timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds one target call may take; past it the call fails (retried, "
                            "then the item's error).")
    ] = 120.0,
    judge_model: Annotated[
        Optional[str], typer.Option(help="litellm model for the judge [default: EVALDUCK_JUDGE_MODEL].")
    ] = None,
    judge_api_base: Annotated[
        Optional[str], typer.Option(help="OpenAI-compatible server for the judge (e.g. http://127.0.0.1:8000/v1).")
    ] = None,
    judge_rpm: Annotated[Optional[float], typer.Option(help="Judge requests per minute for the whole run.")] = None,
    max_cost: Annotated[Optional[float], typer.Option(help="Budget in USD: at this spend (litellm's cost of the "
                        "run's requests) no new request is sent; the run ends budget_exceeded.")] = None,
    allow_unpriced: Annotated[bool, typer.Option("--allow-unpriced", help="With --max-cost: run even with a model "
                              "litellm cannot price (its requests count as free).")] = False,
    judge_timeout: Annotated[
        Optional[float], typer.Option(help="Seconds one judge request may take [default: each scorer's own, 60].")
    ] = None,
    judge_samples: Annotated[
        int, typer.Option(min=1, max=MAX_JUDGE_SAMPLES, help="Times each judge scorer's cell is judged (its own "
                          "seed, cache key and stored row each); the summary then shows the judge's noise.")
    ] = 1,
    judge_aggregate: Annotated[
        str, typer.Option(help="How a cell's samples make its score: mean, median or majority (the most frequent "
                          "verdict).")
    ] = "mean",
    concurrency: Annotated[int, typer.Option(min=1, max=256, help="Items in flight at once.")] = 8,
    name: Annotated[Optional[str], typer.Option(help="Run name; compared with the previous run of that name.")] = None,
    resume: Annotated[
        Optional[str], typer.Option(help="Run id or name to resume: only missing or errored cells are computed.")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Call the target and judge again (refresh the cache).")] = False,
    cache_dir: Annotated[
        Optional[Path], typer.Option(help="Step cache folder [default: EVALDUCK_CACHE_DIR, else .evalduck/cache].")
    ] = None,
    explain_cache: Annotated[
        bool, typer.Option("--explain-cache", help="After the run, per step: results from the cache (hits) and "
                           "computed (misses), with what changed in a miss's key since that item's last run "
                           "(e.g. code (my_evals.py), params, output).")
    ] = False,
    retries: Annotated[int, typer.Option(min=0, max=10, help="Retries of transient target/judge errors.")] = 3,
    retry_backoff_s: Annotated[
        float, typer.Option(min=0.0, help="First retry delay in seconds; doubles each retry (jittered).")
    ] = 1.0,
    chunk_size: Annotated[int, typer.Option(min=1, help="Items per task for cheap code steps.")] = 2000,
    progress_every: Annotated[
        int, typer.Option(min=1, help="Update the Prefect UI's progress artifact every N items.")
    ] = 25,
    fail_fast: Annotated[bool, typer.Option("--fail-fast", help="Stop at the first cell that ends in error.")] = False,
    judge_process: Annotated[
        bool,
        typer.Option(
            "--judge-process/--in-process-judge",
            help="Judge and model requests in a child process (default; keeps litellm's CPU off the flow's "
            "event loop), or in this process.",
        ),
    ] = True,
    report: Annotated[
        bool,
        typer.Option("--report/--no-report", help="Write the run's HTML report to reports/<name>-<run id>.html "
                     "beside the results file (default), or not."),
    ] = True,
    runner: Annotated[
        str, typer.Option(help="Where target calls, judge steps and code chunks run: local or dask (a Dask "
                          "cluster's workers; docs/scale-out.md).")
    ] = "local",
    dask_address: Annotated[
        Optional[str], typer.Option(help="Dask scheduler for --runner dask, e.g. tcp://10.0.0.5:8786 [default: "
                                    "a LocalCluster of --workers processes here].")
    ] = None,
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="Worker processes of the LocalCluster --runner dask starts "
                          "without --dask-address.")
    ] = 2,
    ephemeral: Annotated[
        bool,
        typer.Option("--ephemeral", help="Use a temporary Prefect server for this run, as in CI (also "
                     "EVALDUCK_EPHEMERAL=1): nothing is left running, and the run is in no UI."),
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show Prefect's own log lines too.")] = False,
    dry_run: DryRunOption = False,
    output_format: FormatOption = "table",
) -> None:
    """Score DATASET with the scorers, store every result in DuckDB, print the summary.

    \f
    Long only by its signature: one option per RunOptions field (tests/cli/test_run_options.py); the body
    reads their values from ``ctx.params`` (``_config_values``), so the list is written here once."""  # noqa: D301
    prepare_process(verbose)
    err = Console(stderr=True, soft_wrap=True)
    out = Console(width=console_width(sys.stdout))
    # Every usage error is found here, in a second, before Prefect (and its local server) start.
    config = _config(ctx, _config_values(ctx))
    if dry_run or output_format != "table":
        return show_preflight(ctx, config, output_format, dry_run)  # flows/cli/run_dry.py: not the run
    check_usage(ctx, config)
    check_budget(err, config)  # --max-cost: an unpriced model refused (flows/cli/run_budget.py)
    _prestart_judge(config)
    ran = _run_on_server(ctx, err, config, ephemeral)
    print_result(out, err, *ran)
    end_over_budget(err, ran[0])  # a run its budget stopped: the line that continues it, exit 1


def prepare_process(verbose: bool) -> None:
    """This process made ready for a run: evalduck's environment defaults, Prefect's console lines hidden
    unless ``verbose``, Prefect's settings from this environment, and the working directory importable."""
    from evalduck.flows.inputs.targets import importable_here
    from evalduck.flows.prefect_settings import refresh_prefect
    from evalduck.flows.settings import apply_process_defaults, quiet_console

    apply_process_defaults()
    if not verbose:
        quiet_console()
    refresh_prefect()  # Prefect's settings from this run's environment, if a process before it built them
    importable_here()  # `--target mymod:fn` finds mymod.py here, as `python -m` would


def _config_values(ctx: typer.Context) -> dict[str, Any]:
    """Every EvalConfig field by its option's value (``ctx.params``, renamed by ``_PARAM_OF_FIELD``), paths as
    text, the scorers only when given (else the default three) and ``db`` as `db_path` chooses it."""
    field_of = {param: field for field, param in _PARAM_OF_FIELD.items()}
    values = {field_of.get(param, param): value for param, value in ctx.params.items() if param not in _NOT_CONFIG}
    scorers = values.pop("scorers", None)
    if scorers:
        values["scorers"] = list(scorers)
    for field in ("dataset", "cache_dir"):
        values[field] = str(values[field]) if values[field] else None
    return {**values, "db": str(db_path(ctx))}


def _prestart_judge(config: EvalConfig) -> None:
    """The judge child started while the run is prepared, for a local run that calls a model (on Dask, the
    workers ask their own)."""
    if config.judge_process and config.runner == "local" and calls_models(config):
        from evalduck.flows.judge.process import prestart

        prestart()


def _config(ctx: typer.Context, values: dict[str, Any]) -> EvalConfig:
    """The run's EvalConfig from the options and the project file's defaults (flows/cli/run_project.py); a bad
    value is a usage error naming its option."""
    from pydantic import ValidationError

    from evalduck.flows.cli.run_project import with_project_defaults
    from evalduck.flows.config import EvalConfig

    try:
        return EvalConfig(**with_project_defaults(ctx, values, _PARAM_OF_FIELD))
    except ValidationError as exc:
        raise config_error(ctx, exc, EvalConfig, _PARAM_OF_FIELD) from None


def _run_on_server(ctx: typer.Context, err: Console, config: EvalConfig, ephemeral: bool) -> tuple[Any, str | None, bool]:
    """The run, on the server this folder's runs use; its errors as one line and an exit status."""
    from evalduck.flows.eval_flow import run_eval_config
    from evalduck.flows.run.progress import RichProgress, use_sink
    from evalduck.flows.run.scope import heartbeat_settings
    from evalduck.flows.run.watch import lost_line, watch_api

    with contextlib.ExitStack() as stack:
        api_url, lasting, ours, auth = server_for_run(err, ephemeral, stack)
        try:
            with (use_sink(RichProgress(err)), api_settings(api_url, lasting, auth), heartbeat_settings(own_server=ours),
                  sigterm_as_interrupt(), watch_api(api_url) as watch):
                try:
                    return run_eval_config(config), api_url, lasting
                except Exception:
                    if watch.result is None or not watch.check():  # the results are not all stored, or it answers
                        raise
            err.print(literal(("warning:", "yellow"), " ", lost_line(api_url, watch.result), multiline=True))
            return watch.result, api_url, False
        except KeyboardInterrupt as exc:  # the run recorded itself as cancelled and said how to resume
            raise typer.Exit(143 if isinstance(exc, Terminated) else 130) from None
        except Exception as exc:
            locked = lock_error(exc)  # also behind the engine's StoreWriteError
            if locked is not None:
                stop_locked(err, locked, db_path(ctx))
            full = disk_error(exc)  # a full disk, also behind StoreWriteError
            if full is not None:
                stop_disk(err, full, db_path(ctx))
            if isinstance(exc, (EvalduckError, ValueError)):  # ValueError: e.g. a scorer's bad options
                stop(err, exc, exit_code(exc) if isinstance(exc, EvalduckError) else FAILURE)
            raise
