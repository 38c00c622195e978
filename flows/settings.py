"""The environment variables that move evalduck's files (their defaults, which the project file may set,
are flows/project/defaults.py), and the environment defaults a process that runs evals starts with.

Read when called, never at import."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

__all__ = (
    "DB_ENV",
    "CACHE_DIR_ENV",
    "DEFAULT_DB_FILE",
    "DUCKLAKE_PREFIX",
    "PROCESS_ENV_DEFAULTS",
    "IDLE_TIMEOUT_ENV",
    "DEFAULT_IDLE_TIMEOUT_S",
    "idle_timeout",
    "apply_process_defaults",
    "quiet_console",
)

DB_ENV = "EVALDUCK_DB"
CACHE_DIR_ENV = "EVALDUCK_CACHE_DIR"
DEFAULT_DB_FILE = "evals.duckdb"
# A `--db` / EVALDUCK_DB value that names the shared store rather than a file (flows/store/target.py).
DUCKLAKE_PREFIX = "ducklake:"


# The folder's background processes (Prefect server, warm starter, chart renderer) stop after this many seconds
# with no run and no request to the server (flows/local/idle.py); 0 keeps them until `evalduck stop`.
IDLE_TIMEOUT_ENV = "EVALDUCK_IDLE_TIMEOUT"
DEFAULT_IDLE_TIMEOUT_S = 1800.0


def idle_timeout(environ: Mapping[str, str] | None = None) -> float:
    """``$EVALDUCK_IDLE_TIMEOUT`` seconds in ``environ`` (default: this process's environment; unset: 30
    minutes; 0: never); ValueError naming the variable and the value when it is not a number of seconds >= 0."""
    raw = (os.environ if environ is None else environ).get(IDLE_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_IDLE_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{IDLE_TIMEOUT_ENV}={raw!r} is not a number of seconds >= 0 (e.g. 1800; 0 keeps the "
                         "folder's server running until `evalduck stop`)")
    return value


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
    # per event (Prefect's default batch is 1): this cut the server's CPU during a judge-bound eval, on the core
    # the flow shares, to well under half (docs/benchmarks-history.md, 'Eval flow, current figures'). The UI
    # shows a task run's state at most a second later.
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
}


def apply_process_defaults() -> None:
    """Set ``PROCESS_ENV_DEFAULTS`` in this process's environment where the user set nothing."""
    for key, value in PROCESS_ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)


def quiet_console() -> None:
    """For the CLI: Prefect's per-task console lines give way to the progress bar and the final table
    (run logs still reach the Prefect API and UI). Must run before prefect is imported, or before
    ``prefect_settings.refresh_prefect`` in a process whose Prefect the warm starter configured."""
    from evalduck.flows.prefect_settings import inherited

    if "prefect" in sys.modules and not inherited():
        return
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
