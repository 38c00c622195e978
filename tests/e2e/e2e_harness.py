"""Helpers of the e2e tests: the test copy of prefect.yaml and the REST calls the UI makes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import yaml

from evalduck.flows.local.install import ServeOptions, ServeState, folder_auth

REPO = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("evalduck"))
ROWS = [{"id": f"q{i}", "input": f"Question {i}?", "output": f"A fine answer {i}.", "groundTruth": f"Answer {i}."}
        for i in range(3)]
SMOKE_INTERVAL_S = 4
T = TypeVar("T")
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def short_interval_prefect_yaml(target: Path) -> Path:
    """The project's prefect.yaml with the `smoke` interval shortened and its schedule inactive."""
    config = yaml.safe_load((REPO / "prefect.yaml").read_text())
    (smoke,) = [d for d in config["deployments"] if d["name"] == "smoke"]
    for schedule in smoke["schedules"]:
        schedule["interval"] = SMOKE_INTERVAL_S
        schedule["active"] = False
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    return target


@dataclass
class PrefectApi:
    """The few REST calls the tests make, the same ones the UI makes."""

    client: httpx.Client

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        """One call, retried while the server's SQLite database is too busy to answer (503)."""
        for _ in range(30):
            response = self.client.request(method, path, json=body)
            if response.status_code != 503:
                break
            time.sleep(0.5)
        return response

    def get(self, path: str) -> Any:
        response = self.request("GET", path)
        response.raise_for_status()
        return response.json()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        response = self.request("POST", path, body)
        response.raise_for_status()
        return response.json() if response.content else None

    def patch(self, path: str, body: dict[str, Any]) -> None:
        self.request("PATCH", path, body).raise_for_status()

    def delete(self, path: str) -> None:
        response = self.request("DELETE", path)
        if response.status_code != 404:  # already gone is fine
            response.raise_for_status()

    def deployment(self, name: str) -> dict[str, Any]:
        (found,) = self.post("/deployments/filter", {"deployments": {"name": {"any_": [name]}}})
        return found

    def create_flow_run(self, deployment_id: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
        """What the UI's Run button and Custom run form send."""
        body: dict[str, Any] = {"state": {"type": "SCHEDULED"}}
        if parameters is not None:
            body["parameters"] = parameters
        return self.post(f"/deployments/{deployment_id}/create_flow_run", body)

    def flow_runs(self, deployment_id: str) -> list[dict[str, Any]]:
        body = {"deployments": {"id": {"any_": [deployment_id]}}, "sort": "START_TIME_ASC"}
        return self.post("/flow_runs/filter", body)

    def subflow_runs(self, flow_run_id: str) -> list[dict[str, Any]]:
        return self.post("/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": [flow_run_id]}}})

    def artifacts(self, flow_run_id: str) -> list[dict[str, Any]]:
        return self.post("/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}})

    def wait_terminal(self, flow_run_id: str, timeout: float = 120.0) -> dict[str, Any]:
        def finished() -> dict[str, Any] | None:
            run: dict[str, Any] = self.get(f"/flow_runs/{flow_run_id}")
            return run if run["state_type"] in TERMINAL else None

        return wait_for(f"flow run {flow_run_id} to finish", finished, timeout, every=0.5)


def api_auth(state_dir: Path) -> str:
    """The ``user:password`` of the server evalduck started for this state folder (flows/local/install/credentials.py)."""
    auth = folder_auth(state_dir, create=False)
    assert auth is not None, f"no credentials in {state_dir}"
    return auth


def api_client(api_url: str, state_dir: Path) -> httpx.Client:
    """An HTTP client of that server's API, logged in with its credentials."""
    user, password = api_auth(state_dir).split(":", 1)
    return httpx.Client(base_url=api_url, timeout=30, auth=httpx.BasicAuth(user, password))


def log_in(page: Any, auth: str) -> bool:
    """If the UI page shows its login prompt, log in once as a user does: paste the string, click Login
    (the UI keeps it in the browser's storage, so the other pages of that browser need no login); True
    when it did."""
    from playwright.sync_api import expect

    prompt = page.get_by_placeholder("admin:pass")
    expect(prompt.or_(page.get_by_role("link").first)).to_be_visible(timeout=60_000)
    if prompt.is_visible():
        prompt.fill(auth)
        page.get_by_role("button", name="Login").click()
        expect(prompt).to_have_count(0, timeout=30_000)
        return True
    return False


@dataclass
class Stack:
    state: ServeState
    options: ServeOptions
    api: PrefectApi

    @property
    def db_path(self) -> Path:
        return self.options.db_path

    @property
    def auth(self) -> str:
        return api_auth(self.options.state_dir)

    def worker_log(self) -> str:
        return (self.options.state_dir / "worker.log").read_text(errors="replace")


def wait_for(describe: str, probe: Callable[[], T | None], timeout: float = 120.0, every: float = 1.0) -> T:
    """Poll `probe` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {describe}")
        time.sleep(every)


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def user_env(prefect_home: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a user's shell (no CI, no server set) with its own PREFECT_HOME; from ``base``
    (default os.environ)."""
    base = dict(os.environ) if base is None else base
    env = {k: v for k, v in base.items() if k not in {"CI", "EVALDUCK_EPHEMERAL", "PREFECT_API_URL"}}
    env["PREFECT_HOME"] = str(prefect_home)
    return env


def ours(env: dict[str, str]) -> list[int]:
    """Processes whose environment has this test's PREFECT_HOME."""
    marker = f"PREFECT_HOME={env['PREFECT_HOME']}\0".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if marker in (proc / "environ").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def none_left(env: dict[str, str], timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := ours(env)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@contextmanager
def project_folder(path: Path, base: dict[str, str] | None = None) -> Iterator[tuple[Path, dict[str, str]]]:
    """`path` as a project folder with a dataset, and a user's environment with its own PREFECT_HOME; on
    leaving, `evalduck stop`, then whatever is still ours is killed."""
    (path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    env = user_env(path / "prefect-home", base)
    try:
        yield path, env
    finally:
        subprocess.run([CLI, "stop"], cwd=path, env=env, capture_output=True, timeout=60)
        for pid in ours(env):
            os.kill(pid, 9)
