"""`evalduck run`'s options with the project file's defaults (flows/project/file.py): an option given on
the command line wins, then its environment variable, then the file, then the built-in default."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from evalduck.flows.cli.errors import fail
from evalduck.flows.project.file import ProjectFileError, run_settings
from evalduck.flows.project.root import CONFIG_FILE

__all__ = ("with_project_defaults",)

_UNGIVEN = ("DEFAULT", "DEFAULT_MAP")  # click's ParameterSource names (typer ships its own click)


def _given(ctx: typer.Context, param: str, value: Any) -> bool:
    """Whether the user set ``param``; a value the command computed (``db``: --db, EVALDUCK_DB, the file or
    the default, by `db_path`) counts as given."""
    return value is not None and getattr(ctx.get_parameter_source(param), "name", None) not in _UNGIVEN


def with_project_defaults(ctx: typer.Context, values: Mapping[str, Any], param_of: Mapping[str, str]) -> dict[str, Any]:
    """The EvalConfig fields of a run: ``values`` (every field, by its option's value) reduced to the options
    given, completed from the environment and the project file; the built-in defaults do the rest.

    A usage error (exit 2) for a bad project file or no dataset from either the command line or the file.
    """
    given = {field: value for field, value in values.items() if _given(ctx, param_of.get(field, field), value)}
    try:
        settings = run_settings(given)
    except ProjectFileError as exc:
        fail(str(exc), ctx)
    if "dataset" not in settings:
        fail(f"Missing argument 'dataset': name a dataset file, or set `dataset` in the project's {CONFIG_FILE} "
             "(`evalduck init` writes one)", ctx)
    return settings
