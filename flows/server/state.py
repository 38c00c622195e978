"""What `serve` and the folder's server record (the state file), and the environment and paths of what they start."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError




__all__ = (
    "WORK_POOL",
    "DEFAULT_PORT",
    "QUIET_ENV",
    "ServeError",
    "ServeState",
    "state_path",
    "read_state",
    "write_state",
    "prefect_executable",
    "prefect_home",
    "configured_api_url",
    "child_env",
)

WORK_POOL = "evalduck-pool"
DEFAULT_PORT = 4200
# Variables every process we start gets: no telemetry, no price-list download, no stray bytecode in the project.
QUIET_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "PYTHONDONTWRITEBYTECODE": "1",
}


class ServeError(RuntimeError):
    """A step of `serve` failed; the message says which and where its log is."""


class ServeState(BaseModel):
    """What `serve` started, written to the state file so that `stop` ends exactly that."""

    api_url: str
    ui_url: str
    server_pid: int | None = Field(None, description="None when an already running server was reused")
    worker_pid: int | None = None
    starter_pid: int | None = Field(None, description="the warm starter's (flows/warm/starter.py)")
    starter_socket: str | None = Field(None, description="the unix socket the warm starter listens on")
    work_pool: str = WORK_POOL
    db_path: str | None = Field(None, description="the worker's results file; None for a server `run` started")
    project_dir: str
    prefect_home: str | None = Field(None, description="the server's PREFECT_HOME (its database)")
    started_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


def state_path(state_dir: Path) -> Path:
    return state_dir / "serve.json"


def read_state(state_dir: Path) -> ServeState | None:
    path = state_path(state_dir)
    if not path.exists():
        return None
    try:
        return ServeState.model_validate_json(path.read_text())
    except ValidationError as exc:
        raise ServeError(
            f"{path} is not a state file written by `evalduck serve` ({exc.error_count()} problem(s)); "
            "stop any Prefect server/worker it started by hand, then delete it"
        ) from exc


def write_state(state_dir: Path, state: ServeState) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    state_path(state_dir).write_text(state.model_dump_json(indent=2) + "\n")


def prefect_executable() -> str:
    """The `prefect` script of the running interpreter's environment, so a bare `python` on PATH never matters."""
    return str(Path(sys.executable).with_name("prefect"))


def prefect_home() -> str:
    """The PREFECT_HOME a server started from here uses (its database lives there)."""
    return os.environ.get("PREFECT_HOME") or str(Path.home() / ".prefect")


def configured_api_url() -> str | None:
    """PREFECT_API_URL from the environment or the active Prefect profile (imports Prefect)."""
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    return str(url).rstrip("/") if url else None


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **QUIET_ENV}
    env.update(extra or {})
    return env


# --- the server -------------------------------------------------------------------------------------------
