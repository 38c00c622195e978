"""Where a project folder keeps its local state, and whether a run is ephemeral: read by the thin `evalduck`
entry point before anything heavy is imported, so this module imports only the standard library."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ("EPHEMERAL_ENV", "STATE_DIR_ENV", "STATE_FILE", "ephemeral", "project_state_dir")

EPHEMERAL_ENV = "EVALDUCK_EPHEMERAL"
STATE_DIR_ENV = "EVALDUCK_STATE_DIR"
STATE_FILE = "serve.json"


def ephemeral(flag: bool = False) -> bool:
    """Whether a run uses a temporary server of its own: ``--ephemeral``, EVALDUCK_EPHEMERAL=1, or CI set."""
    value = os.environ.get(EPHEMERAL_ENV, "").strip().lower()
    return flag or value in {"1", "true", "yes"} or bool(os.environ.get("CI"))


def project_state_dir(project: Path | None = None) -> Path:
    """``$EVALDUCK_STATE_DIR``, else ``.evalduck`` in the project folder (the working directory)."""
    configured = os.environ.get(STATE_DIR_ENV)
    return Path(configured).resolve() if configured else (project or Path.cwd()).resolve() / ".evalduck"
