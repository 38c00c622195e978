"""`evalduck init`: make the working directory an evalduck project (flows/project/scaffold.py writes the files)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from evalduck.flows.cli import app, fail
from evalduck.flows.cli.errors import label, value_error
from evalduck.flows.report.text import literal

_console = Console(highlight=False, soft_wrap=True)

# The dataset formats evalduck reads (flows/inputs/datasets/).
_FORMATS = (".jsonl", ".json", ".csv", ".parquet")


def _dataset(ctx: typer.Context, given: Path | None, root: Path) -> str:
    """The deployments' dataset, relative to the project folder when inside it: ``--dataset``, else asked
    for on a terminal, else the example dataset init writes."""
    from evalduck.flows.project.scaffold import EXAMPLE_DATASET

    if given is None:
        if not sys.stdin.isatty():
            return EXAMPLE_DATASET
        answer = typer.prompt("Dataset of your evals (a .jsonl, .json, .csv or .parquet file)", default=EXAMPLE_DATASET)
        if answer.strip() == EXAMPLE_DATASET:
            return EXAMPLE_DATASET
        given = Path(answer.strip())
    full = (root / given.expanduser()).resolve()
    if full.suffix.lower() not in _FORMATS:
        fail(value_error(label(ctx, "dataset"), given, f"must be a {', '.join(_FORMATS)} file"), ctx)
    if not full.is_file():
        fail(value_error(label(ctx, "dataset"), given, "no such file (create it first, or leave --dataset out to "
                         "start from the example dataset)"), ctx)
    try:
        return full.relative_to(root).as_posix()
    except ValueError:  # outside the project: by its absolute path
        return str(full)


@app.command()
def init(
    ctx: typer.Context,
    dataset: Annotated[
        Optional[Path],
        typer.Option(help="Your dataset, named by the deployments and evalduck.toml [default: asked for on a "
                     "terminal, else the example evals/example.jsonl]."),
    ] = None,
    judge_model: Annotated[
        Optional[str], typer.Option(help="litellm model for the judge scorers, written to evalduck.toml.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the files init writes.")] = False,
) -> None:
    """Make this folder an evalduck project: prefect.yaml, evalduck.toml and evals/ (an example dataset, a
    scorer of your own)."""
    from evalduck.flows.project.scaffold import Init, project_name, write_project

    root = Path(os.getcwd())
    chosen = _dataset(ctx, dataset, root)
    written = write_project(Init(root, project_name(root), chosen, judge_model), force=force)  # InitError: exit 1
    for path in written:
        _console.print(literal("wrote ", str(path.relative_to(root))))
    _console.print(literal("\nNext:\n  evalduck run      # scores ", chosen, " with evalduck.toml's scorers\n"
                           "  evalduck show latest   # the newest run's scores and worst items\n"
                           "  evalduck serve    # a local Prefect UI and worker with prefect.yaml's deployments",
                           multiline=True))
