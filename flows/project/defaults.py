"""Where evalduck keeps its files unless told otherwise: the environment variable (flows/settings.py), else
the project file's key, else a place under the project root. One function per default, read when called;
used by the store, the run and the CLI."""

from __future__ import annotations

import os
from pathlib import Path

from evalduck.flows.project.root import in_project
from evalduck.flows.settings import CACHE_DIR_ENV, DB_ENV, DEFAULT_DB_FILE, DUCKLAKE_PREFIX

__all__ = ("default_db_path", "default_cache_dir")


def _project_default(key: str) -> str | None:
    """The project file's ``key`` (flows/project/file.py; a path made absolute against the project root)."""
    from evalduck.flows.project.file import file_defaults  # pydantic and EvalConfig: only when asked

    return file_defaults().get(key)


def default_db_path() -> Path | str:
    """``$EVALDUCK_DB`` when set, else the project file's ``db``, else ``evals.duckdb`` at the project root
    (the working directory outside a project); a shared store's ``ducklake:`` URL stays a string (a Path
    would fold its ``//``)."""
    raw = os.environ.get(DB_ENV) or _project_default("db")
    if raw is None:
        root = in_project()
        return Path(DEFAULT_DB_FILE) if root is None else root / DEFAULT_DB_FILE
    return raw if raw.startswith(DUCKLAKE_PREFIX) else Path(raw)


def default_cache_dir(root: Path | None = None) -> Path:
    """``$EVALDUCK_CACHE_DIR`` when set, else the project file's ``cache_dir``, else ``.evalduck/cache`` under
    ``root`` (default: the project root, the working directory outside a project; ``evalduck serve`` passes
    the folder its worker runs in)."""
    env = os.environ.get(CACHE_DIR_ENV) or _project_default("cache_dir")
    if env:
        return Path(env)
    return (root or in_project() or Path()) / ".evalduck" / "cache"
