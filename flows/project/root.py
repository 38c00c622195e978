"""The project a command runs in: the nearest folder, from the working directory up, that holds an
``evalduck.toml`` or a ``pyproject.toml`` with a ``[tool.evalduck]`` table (found as git finds ``.git``).

That folder is the project root: its ``.evalduck/`` holds the folder's state and its ``evals.duckdb`` is
the default results file, whichever subfolder a command runs in. Standard library only: the thin
``evalduck`` entry point reads it before anything heavy is imported (its keys are checked in
flows/project/file.py).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalduck.errors import EvalduckError

__all__ = ("CONFIG_FILE", "PYPROJECT", "TOOL_TABLE", "Project", "ProjectFileError", "find_project", "project_root",
           "in_project")

CONFIG_FILE = "evalduck.toml"
PYPROJECT = "pyproject.toml"
TOOL_TABLE = "tool.evalduck"


class ProjectFileError(EvalduckError, ValueError):
    """A project file that cannot be read or holds a bad key or value: one line naming the file."""


@dataclass(frozen=True)
class Project:
    """A project's root folder, its settings file and the settings table read from it (keys unchecked)."""

    root: Path
    file: Path
    table: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """The file as an error names it (``pyproject.toml [tool.evalduck]`` for a table in pyproject)."""
        return f"{self.file} [{TOOL_TABLE}]" if self.file.name == PYPROJECT else str(self.file)


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectFileError(f"{path}: cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProjectFileError(f"{path}: not valid TOML ({exc})") from None


def _tool_table(path: Path) -> dict[str, Any] | None:
    """pyproject.toml's ``[tool.evalduck]`` table, None when it has none (a broken pyproject.toml that does
    not mention evalduck is not evalduck's to report)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if "evalduck" not in text:
        return None
    table = _read(path).get("tool", {}).get("evalduck")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ProjectFileError(f"{path}: [{TOOL_TABLE}] must be a table of settings, got {table!r:.60}")
    return table


def _at(folder: Path) -> Project | None:
    """The project whose root is ``folder``, if it is one; both files defining settings is an error."""
    own = folder / CONFIG_FILE
    pyproject = folder / PYPROJECT
    tool = _tool_table(pyproject) if pyproject.is_file() else None
    if own.is_file():
        if tool is not None:
            raise ProjectFileError(f"{own}: {pyproject} has a [{TOOL_TABLE}] table too; keep the settings in one of them")
        return Project(folder, own, _read(own))
    return Project(folder, pyproject, tool) if tool is not None else None


def _here(start: Path | None) -> Path | None:
    """``start`` made absolute (default: the working directory); None when the working directory is gone."""
    try:
        return Path(os.path.abspath(start or os.getcwd()))
    except OSError:
        return None


def find_project(start: Path | None = None) -> Project | None:
    """The project that ``start`` (default: the working directory) is in, None outside any.

    Raises:
        ProjectFileError: the nearest project file cannot be read or parsed.
    """
    here = _here(start)
    for folder in (here, *here.parents) if here else ():
        project = _at(folder)
        if project is not None:
            return project
    return None


def _root_of(here: Path) -> Path | None:
    for folder in (here, *here.parents):
        try:
            project = _at(folder)
        except ProjectFileError:  # left for the command to report; its folder is still the root
            return folder
        if project is not None:
            return project.root
    return None


def project_root(start: Path | None = None) -> Path:
    """The project's root, or ``start`` (the working directory) outside any project; an unreadable project
    file is left for the command to report (flows/project/file.py), its folder is still the root."""
    here = _here(start)
    if here is None:
        return Path()
    return _root_of(here) or here


def in_project() -> Path | None:
    """The project root when the working directory is in a project, else None (default files then go in
    the working directory, as they always did)."""
    here = _here(None)
    return _root_of(here) if here is not None else None
