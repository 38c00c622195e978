"""Where evalduck keeps its files unless told otherwise, and the environment variables that move them.

One function per default, read when called (never at import), used by the flow, the store and the CLI.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ("DB_ENV", "CACHE_DIR_ENV", "DEFAULT_DB_FILE", "default_db_path", "default_cache_dir")

DB_ENV = "EVALDUCK_DB"
CACHE_DIR_ENV = "EVALDUCK_CACHE_DIR"
DEFAULT_DB_FILE = "evals.duckdb"


def default_db_path() -> Path:
    """``$EVALDUCK_DB`` when set, else ``./evals.duckdb``."""
    return Path(os.environ.get(DB_ENV) or DEFAULT_DB_FILE)


def default_cache_dir(root: Path | None = None) -> Path:
    """``$EVALDUCK_CACHE_DIR`` when set, else ``.evalduck/cache`` under ``root`` (default: the working directory;
    ``evalduck serve`` passes the project folder its worker runs in)."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    return (Path() if root is None else root) / ".evalduck" / "cache"
