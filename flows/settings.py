"""Where evalduck keeps its files unless told otherwise, the environment variables that move them, and the
environment defaults a process that runs evals starts with.

One function per default, read when called (never at import), used by the flow, the store and the CLI.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = (
    "DB_ENV",
    "CACHE_DIR_ENV",
    "DEFAULT_DB_FILE",
    "DUCKLAKE_PREFIX",
    "PROCESS_ENV_DEFAULTS",
    "default_db_path",
    "default_cache_dir",
    "apply_process_defaults",
    "quiet_console",
)

DB_ENV = "EVALDUCK_DB"
CACHE_DIR_ENV = "EVALDUCK_CACHE_DIR"
DEFAULT_DB_FILE = "evals.duckdb"
# A `--db` / EVALDUCK_DB value that names the shared store rather than a file (flows/store/target.py).
DUCKLAKE_PREFIX = "ducklake:"


def _project_default(key: str) -> str | None:
    """The project file's ``key`` (flows/project_config.py; a path made absolute against the project root)."""
    from evalduck.flows.project_config import file_defaults

    return file_defaults().get(key)


def default_db_path() -> Path | str:
    """``$EVALDUCK_DB`` when set, else the project file's ``db``, else ``evals.duckdb`` at the project root
    (the working directory outside a project); a shared store's ``ducklake:`` URL stays a string (a Path
    would fold its ``//``)."""
    from evalduck.flows.project import project_root

    raw = os.environ.get(DB_ENV) or _project_default("db")
    if raw is None:
        root = project_root()
        return Path(DEFAULT_DB_FILE) if root == Path.cwd() else root / DEFAULT_DB_FILE
    return raw if raw.startswith(DUCKLAKE_PREFIX) else Path(raw)


def default_cache_dir(root: Path | None = None) -> Path:
    """``$EVALDUCK_CACHE_DIR`` when set, else the project file's ``cache_dir``, else ``.evalduck/cache`` under
    ``root`` (default: the project root, the working directory outside a project; ``evalduck serve`` passes
    the folder its worker runs in)."""
    from evalduck.flows.project import project_root

    env = os.environ.get(CACHE_DIR_ENV) or _project_default("cache_dir")
    if env:
        return Path(env)
    if root is None:
        root = project_root()
        root = Path() if root == Path.cwd() else root
    return root / ".evalduck" / "cache"


# Defaults (``setdefault``: a user's explicit setting always wins) for a process that runs evals, applied by
# the entry points (the CLI, ``run_evals``' call, ``flows``' public names) before prefect is imported.
PROCESS_ENV_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    # A fresh PREFECT_HOME runs ~120 SQLite migrations on first start: 20 s (Prefect's default) is too short
    # on a loaded 2-core machine.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    # The local server's services log CancelledError tracebacks when it is stopped at exit.
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    # Servers started from here record task runs from their events in batches, not one SQLite transaction
    # per event (Prefect's default batch is 1): the server's CPU during a 600-task-run eval fell from ~80% to
    # ~30% of a core, the core the flow shares (docs/benchmarks.md). The UI shows a task run's state at most
    # a second later.
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
}


def apply_process_defaults() -> None:
    for key, value in PROCESS_ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)


def quiet_console(imported_before: bool = False) -> None:
    """For the CLI: Prefect's per-task console lines give way to the progress bar and the final table
    (run logs still reach the Prefect API and UI). Must run before prefect is imported, or
    ``imported_before`` when the caller re-reads Prefect's logging settings after it (a warm child)."""
    if "prefect" in sys.modules and not imported_before:
        return
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
