"""Helpers of the e2e tests: the test copy of prefect.yaml and the REST calls the UI makes."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import yaml

from flows.server import ServeOptions, ServeState

REPO = Path(__file__).resolve().parents[2]
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


@dataclass
class Stack:
    state: ServeState
    options: ServeOptions
    api: PrefectApi

    @property
    def db_path(self) -> Path:
        return self.options.db_path

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
