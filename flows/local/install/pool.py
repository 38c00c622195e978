"""The work pool, its job template and the deployments of prefect.yaml, through Prefect's client."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient

from evalduck.flows.local.install.processes import log_tail
from evalduck.flows.local.install.state import WORK_POOL, ServeError, child_env, prefect_executable

__all__ = ("ui_api_url", "flow_run_command", "ensure_work_pool", "wait_worker_online", "deploy_all")

def ui_api_url(base_url: str) -> str | None:
    """The API URL the browser UI will call, as the server announces it."""
    try:
        return httpx.get(f"{base_url}/ui-settings", timeout=5).json().get("api_url")
    except (httpx.HTTPError, ValueError):
        return None


# --- work pool, deployments, worker -----------------------------------------------------------------------


@contextmanager
def _client(api_url: str) -> Iterator[SyncPrefectClient]:
    """Prefect's own client (it sends PREFECT_API_AUTH_STRING), with API errors turned into ServeError."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    try:
        with temporary_settings({PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
            yield client
    except httpx.HTTPStatusError as exc:
        hint = " (basic auth: set PREFECT_API_AUTH_STRING)" if exc.response.status_code == 401 else ""
        raise ServeError(f"the Prefect API at {api_url} refused {exc.request.url.path}: {exc}{hint}") from exc


def flow_run_command() -> str:
    """What the worker runs for a flow run: the warm starter's client (flows/local/warm/flow_run.py), which falls
    back to Prefect's own `python -m prefect.engine`, with this environment's interpreter."""
    return shlex.join([sys.executable, "-m", "evalduck.flows.local.warm.flow_run"])


def _job_template() -> dict[str, Any]:
    from prefect.workers.process import ProcessWorker

    template = ProcessWorker.get_default_base_job_template()
    template["variables"]["properties"]["command"]["default"] = flow_run_command()
    return template


def ensure_work_pool(api_url: str, name: str = WORK_POOL) -> bool:
    """Create the process work pool unless it exists, with ``flow_run_command`` as its default command (an
    existing pool of that name gets it too); True when it was created."""
    from prefect.client.schemas.actions import WorkPoolCreate, WorkPoolUpdate
    from prefect.exceptions import ObjectNotFound

    template = _job_template()
    with _client(api_url) as client:
        try:
            pool = client.read_work_pool(name)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(name=name, type="process", base_job_template=template))
            return True
        if pool.base_job_template != template:
            client.update_work_pool(name, WorkPoolUpdate(base_job_template=template))
        return False


def wait_worker_online(
    api_url: str, process: subprocess.Popen[bytes], log: Path, since: datetime, pool: str = WORK_POOL,
    timeout: float = 120.0,
) -> None:
    """Wait for a heartbeat from a worker of `pool` newer than `since`; fail with the log if ours exits."""
    deadline = time.monotonic() + timeout
    with _client(api_url) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ServeError(f"the worker exited with code {process.returncode}{log_tail(log)}")
            beats = [w.last_heartbeat_time for w in client.read_workers_for_work_pool(pool)]
            if any(beat is not None and beat >= since for beat in beats):
                return
            time.sleep(0.5)
    raise ServeError(f"the worker did not report to {api_url} within {timeout:.0f} s{log_tail(log)}")


def deploy_all(
    project_dir: Path, api_url: str, log: Path, prefect_file: Path | None = None, env: Mapping[str, str] | None = None
) -> str:
    """`prefect --no-prompt deploy --all` from the project folder (its prefect.yaml's build step records it)."""
    command = [prefect_executable(), "--no-prompt", "deploy", "--all"]
    if prefect_file is not None:
        command += ["--prefect-file", str(prefect_file)]
    deploy_env = child_env({**(env or {}), "PREFECT_API_URL": api_url})
    done = subprocess.run(
        command, cwd=project_dir, env=deploy_env, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise ServeError(f"`prefect deploy --all` failed (exit {done.returncode}){log_tail(log, 30)}")
    return done.stdout
