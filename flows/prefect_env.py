"""Environment defaults applied before prefect is first imported: no telemetry, a patient first start of
Prefect's local (ephemeral) server, no server-side shutdown tracebacks on the user's terminal, and
batched task-run recording on servers started from here.

Only defaults (``setdefault``): a user's explicit setting always wins.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

__all__ = ("apply_defaults", "quiet_console", "local_mode_settings", "quiet_task_run_info")

_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    # A fresh PREFECT_HOME runs ~120 SQLite migrations on first start: 20 s (Prefect's default) is too short
    # on a loaded 2-core machine.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    # The local server's services log CancelledError tracebacks when it is stopped at exit.
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    # Servers started from here (local mode's temporary one, `evalduck serve`) record task runs from their
    # events in batches, not one SQLite transaction per event (Prefect's default batch is 1): measured, the
    # server's CPU during a 600-task-run eval fell from ~80% to ~30% of a core, the core the flow shares.
    # The UI shows a task run's state at most a second later.
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
}


def apply_defaults() -> None:
    for key, value in _DEFAULTS.items():
        os.environ.setdefault(key, value)


def quiet_console(imported_before: bool = False) -> None:
    """For the CLI: Prefect's per-task console lines give way to the progress bar and the final table
    (run logs still reach the Prefect API and UI). Must run before prefect is imported, or
    ``imported_before`` when the caller re-reads Prefect's logging settings after it (a warm child)."""
    if "prefect" in sys.modules and not imported_before:
        return
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")


@contextlib.contextmanager
def local_mode_settings() -> Iterator[None]:
    """Around a flow call: in local mode (no ``PREFECT_API_URL``), no flow-run heartbeats.

    Heartbeats let a long-lived server mark a crashed run as such; local mode's temporary server ends with
    this process, so they serve nothing there. And they cost every run: Prefect's heartbeat thread sleeps
    in one-second steps and a sync flow joins it on exit, which measured 0-1 s (0.5 s on average) per run.
    Against a server, heartbeats stay on."""
    from prefect.context import SettingsContext
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    if settings.api.url or settings.flows.heartbeat_frequency is None:
        yield
        return
    quiet = settings.model_copy(update={"flows": settings.flows.model_copy(update={"heartbeat_frequency": None})})
    current = SettingsContext.get()
    with SettingsContext(profile=current.profile if current else None, settings=quiet):  # type: ignore[arg-type]
        yield


_CHATTER = ("Created task run ", "Finished in state ")  # at INFO, the latter is only ever a completed state


class _DropTaskRunChatter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno == logging.INFO and isinstance(record.msg, str) and record.msg.startswith(_CHATTER))


@contextlib.contextmanager
def quiet_task_run_info() -> Iterator[None]:
    """Around a run: Prefect's two routine lines per task run ("Created task run ...", "Finished in state
    Completed()" or "Cached(...)") are dropped; everything else (a retry, a failed step at ERROR, the
    flow's own lines) still reaches the console and the API.

    That is ~1,600 lines for a 200-item judge-bound run, each formatted, printed and sent to the API,
    which stores it; the UI shows every task run and its state without them. Measured on that run
    (docs/benchmarks.md): 1-4 s less CPU in the flow's process, 2-9 points less machine load. A level the
    user set on the ``prefect.task_runs`` logger (e.g. ``PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL=
    INFO``) keeps them."""
    task_runs = logging.getLogger("prefect.task_runs")
    if task_runs.level != logging.NOTSET:
        yield
        return
    chatter = _DropTaskRunChatter()
    task_runs.addFilter(chatter)
    try:
        yield
    finally:
        task_runs.removeFilter(chatter)
