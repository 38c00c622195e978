"""The project file's settings (``evalduck.toml`` or ``[tool.evalduck]``, found by flows/project/root.py): the
project's defaults for every command, checked against the run options they default.

Its keys are EvalConfig's fields (the same names, bounds and help as the CLI options, the UI form and
``run_evals``' keywords), minus the per-run ones; none has a default of its own here, so an absent key
leaves the built-in default in charge. Precedence, for each key: a CLI option or ``run_evals`` keyword, then
its environment variable, then the file, then the built-in default (``resolve``).
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from evalduck.flows.config import EvalConfig
from evalduck.flows.project.root import Project, ProjectFileError, find_project
from evalduck.flows.settings import CACHE_DIR_ENV, DB_ENV, DUCKLAKE_PREFIX
from evalduck.scorers import JUDGE_MODEL_ENV, describe_validation, did_you_mean

__all__ = ("FILE_KEYS", "ENV_OF_KEY", "ProjectSettings", "load_settings", "file_defaults", "resolve", "run_settings",
           "ProjectFileError")

# Said for one run, never a project's default.
_PER_RUN = {"resume": "--resume", "refresh": "--no-cache"}
FILE_KEYS: tuple[str, ...] = tuple(key for key in EvalConfig.model_fields if key not in _PER_RUN)
# Keys that name a file or folder: relative to the project root in the file.
_PATH_KEYS = ("dataset", "db", "cache_dir")
# The environment variable of a key, where it has one (each read where it always was: flows/settings.py,
# evalduck.scorers' judge settings).
ENV_OF_KEY: dict[str, str] = {"db": DB_ENV, "cache_dir": CACHE_DIR_ENV, "judge_model": JUDGE_MODEL_ENV}


def _unset_by_default(name: str) -> tuple[Any, Any]:
    """EvalConfig's field ``name`` (type, bounds, help) with no default: None is "not in the file"."""
    field = copy.copy(EvalConfig.model_fields[name])
    field.default, field.default_factory = None, None
    return Optional[field.annotation], field  # noqa: UP007 - create_model wants a runtime type


ProjectSettings: type[BaseModel] = create_model(
    "ProjectSettings",
    __config__=ConfigDict(extra="forbid"),
    __doc__="The settings a project file may hold: EvalConfig's fields, all optional.",
    **{name: _unset_by_default(name) for name in FILE_KEYS},
)


def load_settings(project: Project) -> BaseModel:
    """The project's settings, checked.

    Raises:
        ProjectFileError: one line naming the file, the key and what it allows.
    """
    for key in project.table:
        if key in _PER_RUN:
            raise ProjectFileError(f"{project.where}: `{key}` is said per run, not in the project file (give "
                                   f"{_PER_RUN[key]} to `evalduck run`)")
        if key not in FILE_KEYS:
            hint = did_you_mean(key, FILE_KEYS)
            raise ProjectFileError(f"{project.where}: unknown key `{key}`{'; ' + hint if hint else ''} "
                                   f"(keys: {', '.join(FILE_KEYS)})")
    try:
        return ProjectSettings.model_validate(project.table)
    except ValidationError as exc:
        raise ProjectFileError(f"{project.where}: {describe_validation(exc, 'key')}") from None


def _at_root(project: Project, value: str) -> str:
    """A path from the file, relative to the project root (a shared store's URL as it is)."""
    if value.startswith(DUCKLAKE_PREFIX):
        return value
    return str(project.root / Path(value).expanduser())


def file_defaults(start: Path | None = None) -> dict[str, Any]:
    """The keys the project file of ``start`` (default: the working directory) sets, paths made absolute
    against its root; {} outside a project.

    Raises:
        ProjectFileError: the file is unreadable or holds a bad key or value.
    """
    project = find_project(start)
    if project is None:
        return {}
    settings = load_settings(project)
    values = {key: getattr(settings, key) for key in settings.model_fields_set if getattr(settings, key) is not None}
    for key in _PATH_KEYS:
        if key in values:
            values[key] = _at_root(project, values[key])
    if "scorers" in values:
        values["scorers"] = [spec.model_dump() for spec in values["scorers"]]
    return values


def resolve(given: Mapping[str, Any], file: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings a run takes: each key from ``given`` (CLI options, ``run_evals`` keywords: only those
    the caller set), else its environment variable, else ``file``; a key none of them sets is left out, for
    the built-in default."""
    environ = os.environ if environ is None else environ
    env = {key: environ[var] for key, var in ENV_OF_KEY.items() if environ.get(var, "").strip()}
    return {**file, **env, **given}


def run_settings(given: Mapping[str, Any], start: Path | None = None) -> dict[str, Any]:
    """``resolve`` with the project file of ``start`` (default: the working directory), for a run; the
    project root goes on the import path (after the working directory), so the file's import paths
    (``evals.my_evals:...``) are found from any of its subfolders, as in a deployment run from the root.

    Raises:
        ProjectFileError: the file is unreadable or holds a bad key or value.
    """
    project = find_project(start)
    if project is None:
        return resolve(given, {})
    file = file_defaults(project.root)
    root = str(project.root)
    if root not in sys.path:
        sys.path.insert(1 if sys.path and sys.path[0] == os.getcwd() else 0, root)
    return resolve(given, file)
