"""`evalduck serve` / `evalduck stop`: the one-command local installation (`make serve` / `make stop`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from evalduck.flows.cli import app, db_path, fail
from evalduck.flows.cli.errors import label, value_error
from evalduck.flows.project.defaults import default_cache_dir
from evalduck.flows.project.root import project_root
from evalduck.flows.report.text import literal
from evalduck.flows.settings import CACHE_DIR_ENV

_console = Console(highlight=False, soft_wrap=True)

StateDir = Annotated[
    Path | None,
    typer.Option("--state-dir", envvar="EVALDUCK_STATE_DIR",
                 help="Where the pids and logs go (default: .evalduck/ in the project folder)."),
]


def _say(line: str) -> None:
    _console.print(literal(line, multiline=True))


@app.command()
def serve(
    ctx: typer.Context,
    project_dir: Annotated[
        Optional[Path], typer.Option(help="The project folder holding prefect.yaml [default: the project root, found "
                                     "from the working directory as git finds .git].", show_default=False)
    ] = None,
    port: Annotated[
        int, typer.Option(envvar="EVALDUCK_PORT", min=1, max=65535, help="Port of a local server started here.")
    ] = 4200,
    host: Annotated[str, typer.Option(help="Interface of a local server started here.")] = "127.0.0.1",
    cache_dir: Annotated[
        Path | None, typer.Option(envvar=CACHE_DIR_ENV, help="Step cache folder [default: .evalduck/cache in the project].")
    ] = None,
    prefect_file: Annotated[Path | None, typer.Option(help="Deployments to create (default prefect.yaml).")] = None,
    state_dir: StateDir = None,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds to wait for a new server's /api/health.")] = 180.0,
) -> None:
    """Start a Prefect server (unless PREFECT_API_URL names one), deploy prefect.yaml, start a worker.

    The worker's runs write to the global `--db` file (EVALDUCK_DB, default ./evals.duckdb), resolved
    to an absolute path so UI-triggered, scheduled and `evalduck run` runs share it.
    """
    from evalduck.flows.local.install import ServeError, ServeOptions, configured_api_url
    from evalduck.flows.local.install import serve as start

    project = (project_dir or project_root()).resolve()
    if not project.is_dir():
        fail(value_error(label(ctx, "project_dir"), project_dir, "no such folder (name a project folder)"), ctx)
    if not (project / "prefect.yaml").exists() and prefect_file is None:
        if project_dir is None:
            fail(f"no prefect.yaml in {project} (the project folder): run `evalduck init` there to make it an evalduck "
                 "project, or name one with --project-dir", ctx)
        fail(value_error(label(ctx, "project_dir"), project, "holds no prefect.yaml: run `evalduck init` there to make "
                         "it an evalduck project"), ctx)
    if prefect_file is not None and not prefect_file.is_file():
        fail(value_error(label(ctx, "prefect_file"), prefect_file, "no such file"), ctx)
    options = ServeOptions(
        project_dir=project,
        state_dir=(state_dir or project / ".evalduck").resolve(),
        db_path=db if isinstance(db := db_path(ctx), str) else db.resolve(),
        cache_dir=(cache_dir or default_cache_dir(project)).resolve(),
        host=host,
        port=port,
        api_url=configured_api_url(),
        prefect_file=prefect_file.resolve() if prefect_file else None,
        health_timeout=timeout,
        extra_env=_judge_env(),
    )
    try:
        start(options, say=_say)
    except ServeError as exc:
        _console.print(literal("evalduck serve: ", str(exc), style="red", multiline=True))
        raise typer.Exit(1) from exc


def _judge_env() -> dict[str, str]:
    """The project file's judge model for the worker's runs, unless EVALDUCK_JUDGE_MODEL is set (it wins, and
    reaches the worker anyway); the file's db and cache folder reach it as --db and the cache folder."""
    from evalduck.flows.project.file import ENV_OF_KEY, file_defaults

    var = ENV_OF_KEY["judge_model"]
    model = file_defaults().get("judge_model")
    return {var: model} if model and not os.environ.get(var, "").strip() else {}


@app.command()
def stop(
    project_dir: Annotated[
        Optional[Path], typer.Option(help="The project folder `serve` ran in [default: the project root].",
                                     show_default=False)
    ] = None,
    state_dir: StateDir = None,
    every_folder: Annotated[bool, typer.Option("--all", help="Every folder's processes of this user (the "
                                               "registry under the runtime folder: flows/local/install/folders.py).")] = False,
) -> None:
    """Stop what `evalduck serve` or a run started for this folder (by process id): idle watcher, worker,
    warm starter and its renderer, server."""
    from evalduck.flows.local.install import ServeError, stop_all
    from evalduck.flows.local.install import stop as end

    try:
        if every_folder:
            stop_all(say=_say)
            return
        end((state_dir or (project_dir or project_root()).resolve() / ".evalduck").resolve(), say=_say)
    except ServeError as exc:
        _console.print(literal("evalduck stop: ", str(exc), style="red", multiline=True))
        raise typer.Exit(1) from exc
