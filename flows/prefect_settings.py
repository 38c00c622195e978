"""Prefect's settings and logging rebuilt from this process's environment, when they were built from another's.

A run the warm starter forked inherits the Prefect the starter imported and configured before this run's
environment, working directory and files were known. The starter records what it built them from
(``remember_settings``); ``refresh_prefect`` rebuilds them when that differs. Any entry point may call it: it
is a no-op in a process that built its own (so the CLI need not know whether it was forked). A leaf: prefect
is imported only when a rebuild is needed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ("inherited", "refresh_prefect", "remember_settings", "settings_sources")

_PREFECT_FILES = (".env", "prefect.toml", "pyproject.toml")  # read by Prefect's settings from the cwd
# What Prefect's settings and logging were last built from (``settings_sources``), set by the warm starter.
_built_from: tuple[Any, ...] | None = None


def inherited() -> bool:
    """Whether this process's Prefect was imported and configured by the warm starter it was forked from."""
    return _built_from is not None


def settings_sources() -> tuple[Any, ...]:
    """Everything Prefect's settings and logging configuration are read from: its variables, the working
    directory and the files it reads there, and the profiles file (by modification time)."""
    from prefect.settings import get_current_settings

    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("PREFECT_") or k == "DO_NOT_TRACK")
    files = [Path(name) for name in _PREFECT_FILES] + [get_current_settings().profiles_path]
    return (os.getcwd(), env, [(str(p.resolve()), p.stat().st_mtime_ns if p.exists() else None) for p in files])


def remember_settings() -> None:
    """In the warm starter, after its imports: what its Prefect settings were built from."""
    global _built_from
    _built_from = settings_sources()


def refresh_prefect() -> None:
    """Prefect's settings and logging from the current environment, unless they were built here or from the
    same sources in the starter (a rebuild is slow: docs/benchmarks-history.md, 'Runs forked from a warm
    starter')."""
    global _built_from
    if _built_from is None:
        return
    sources = settings_sources()
    if sources == _built_from:
        return
    import prefect.context
    import prefect.logging.configuration

    prefect.context.refresh_global_settings_context()
    prefect.logging.configuration.setup_logging(incremental=False)
    _built_from = settings_sources()  # the profiles path may have moved with PREFECT_HOME


def ui_url_for(api_url: str) -> str:
    """The UI's address of a Prefect API URL (the server serves both)."""
    return api_url.removesuffix("/").removesuffix("/api")
