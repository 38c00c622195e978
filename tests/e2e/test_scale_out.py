"""Scale-out on one machine: what docs/scale-out.md deploys on several, with real processes throughout.

One PostgreSQL (the Prefect server's database and the shared store's catalog), one Prefect server on it
(asyncpg), the project's deployments, two process workers on one pool writing to one shared store (a
DuckLake, Parquet files in a temp folder), three API-created runs at once, the third with `runner: dask` (a
LocalCluster of 2 workers). The worker that picked up the first run is SIGKILLed once that run has stored
cells; its flow runs crash with it and are resumed (or, if their eval had not started, run again) on the
other worker. Then: every eval run completed, every cell stored once, and the plain `duckdb` shell compares
two of them on the shared store.

Run by `make test-shared` (.venv-shared); skipped by `make test`. One module, one server, as cheap as we
could make it: the runs are small code-scorer evals.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import httpx
import pytest
from e2e_harness import REPO, TERMINAL, PrefectApi, free_port, jsonl, short_interval_prefect_yaml, wait_for
from pg_harness import postgres_server

from evalduck.flows.local.install.pool import deploy_all, ensure_work_pool, wait_worker_online
from evalduck.flows.local.install.processes import start_server, start_worker, wait_healthy
from evalduck.flows.local.install.stopping import stop_server, stop_worker
from evalduck.flows.store import Store
from evalduck.flows.store.target import parse_target

pytestmark = [pytest.mark.e2e, pytest.mark.shared]
N_ROWS = 300
SCORERS = [{"id": "tone-scorer"}, {"id": "textual-difference-scorer"}]
DASK = {"runner": "dask", "workers": 2}


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    root = tmp_path_factory.mktemp("scale-out")
    with postgres_server(databases=("prefect", "evals")) as pg:
        host = pg.split("://", 1)[1]
        lake = f"ducklake:postgres://{host}/evals?data_path={root / 'lake'}/"
        env = {"PREFECT_HOME": str(root / "prefect-home"),
               "PREFECT_API_DATABASE_CONNECTION_URL": f"postgresql+asyncpg://{host}/prefect"}
        port = free_port()
        api_url = f"http://127.0.0.1:{port}/api"
        server = start_server("127.0.0.1", port, root / "server.log", env)
        workers: list[subprocess.Popen[bytes]] = []
        try:
            wait_healthy(api_url, 180, server, root / "server.log")
            ensure_work_pool(api_url)
            deploy_all(REPO, api_url, root / "deploy.log", short_interval_prefect_yaml(root / "prefect.yaml"), env)
            since = datetime.now(UTC) - timedelta(seconds=2)
            worker_env = {**env, "EVALDUCK_DB": lake, "EVALDUCK_CACHE_DIR": str(root / "cache"),
                          "EVALDUCK_STATE_DIR": str(root / "state")}
            for i in range(2):
                workers.append(start_worker(api_url, REPO, root / f"worker{i}.log", worker_env))
            for i, worker in enumerate(workers):
                wait_worker_online(api_url, worker, root / f"worker{i}.log", since)
            with httpx.Client(base_url=api_url, timeout=30) as client:
                yield {"api": PrefectApi(client), "lake": lake, "root": root, "workers": workers}
        finally:
            for worker in workers:
                if worker.poll() is None:
                    stop_worker(worker.pid)
            stop_server(server.pid)


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's parent here may never reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# How long a run whose worker died may go on without ending before the operator gives up on it: an orphaned
# process can hang (seen once with a Dask run: its LocalCluster's processes outlived the worker, the run never
# ended); the operator then kills it and resumes its eval run, as the test does below.
ORPHAN_PATIENCE_S = 150


def _ended_or_orphaned(api: PrefectApi, flow_run_id: str, killed: float, live_workers: set[int]) -> str | None:
    """The run's terminal state type, "ORPHANED" when nothing will ever report one (its process gone, or a process
    no live worker is the parent of, still not done ORPHAN_PATIENCE_S after the kill: killed here), else None."""
    run = api.get(f"/flow_runs/{flow_run_id}")
    if run["state_type"] in TERMINAL:
        return str(run["state_type"])
    pid = run.get("infrastructure_pid")
    if pid:
        process = int(str(pid).rsplit(":", 1)[-1])
        if not _alive(process):
            return "ORPHANED"
        if time.monotonic() - killed > ORPHAN_PATIENCE_S and _ppid(process) not in live_workers:
            os.kill(process, signal.SIGKILL)
            return "ORPHANED"
        return None
    # Pending with no process: its worker died between taking it and starting it (a live one takes ~1 s).
    return "ORPHANED" if run["state_type"] == "PENDING" and time.monotonic() - killed > 60 else None


@pytest.mark.timeout(1200)  # three runs, a kill, up to three reruns: minutes on a loaded 2-core CI machine
def test_two_workers_two_runs_at_once_a_worker_killed_every_cell_once(cluster: dict[str, object]) -> None:
    api: PrefectApi = cluster["api"]  # type: ignore[assignment]
    root: Path = cluster["root"]  # type: ignore[assignment]
    lake: str = cluster["lake"]  # type: ignore[assignment]
    workers: list[subprocess.Popen[bytes]] = cluster["workers"]  # type: ignore[assignment]
    rows = [{"id": f"q{i}", "input": f"Question {i}?", "output": f"A fine answer {i}.", "groundTruth": f"Answer {i}."}
            for i in range(N_ROWS)]
    dataset = jsonl(root / "data.jsonl", rows)

    def config(name: str, **extra: object) -> dict[str, object]:
        # No HTML report: on a shared store it goes to reports/ in the working directory, which for a
        # deployment's flow run is this checkout (tests/store/test_shared_store.py tests the report on the lake).
        return {**extra, "dataset": str(dataset), "scorers": SCORERS, "name": name, "report": False}

    # Two deployments, so the two runs may overlap (each deployment runs one at a time).
    first = api.create_flow_run(api.deployment("demo")["id"], {"config": config("first")})
    second = api.create_flow_run(api.deployment("nightly")["id"], {"config": config("second"), "max_drop": 1.0})
    # And a third at once, whose steps run on a Dask LocalCluster of 2 workers (--runner dask).
    third = api.create_flow_run(api.deployment("smoke")["id"], {"config": config("third", **DASK), "max_drop": 1.0})

    store = Store(lake)  # this test's own view of the shared store

    def stored(name: str) -> int:
        return int(store.sql("SELECT count(*) FROM scores JOIN runs USING (run_id) WHERE name = ?", [name]).rows[0][0])

    def running_pid() -> int | None:
        run = api.get(f"/flow_runs/{first['id']}")
        pid = run.get("infrastructure_pid")
        return int(str(pid).rsplit(":", 1)[-1]) if run["state_type"] == "RUNNING" and pid and stored("first") else None

    child = wait_for("the first run to store cells on a worker", running_pid, timeout=240, every=0.2)
    picked = [w for w in workers if w.pid == _ppid(child)]
    assert picked, f"flow run process {child} is not a child of either worker"
    killed_at = stored("first")
    os.kill(picked[0].pid, signal.SIGKILL)
    picked[0].wait(timeout=30)

    # A flow run whose worker died ends Crashed when its process, orphaned, next writes output; one whose process
    # died before its engine reported anything (still importing when the worker went) stays Pending forever, as
    # it would on a dead machine. The operator marks such a run Crashed (the UI's "Change state"), then resumes
    # the eval run it was writing by a new flow run with `resume`, on the surviving worker.
    killed = time.monotonic()
    flows = {"first": (first, "demo", {}), "second": (second, "nightly", {}), "third": (third, "smoke", DASK)}
    for name, (run, deployment, extra) in flows.items():
        state = wait_for(f"{name} to finish or be orphaned",
                         partial(_ended_or_orphaned, api, run["id"], killed, {w.pid for w in workers if w.poll() is None}),
                         timeout=300, every=0.5)
        if state == "ORPHANED":
            api.post(f"/flow_runs/{run['id']}/set_state",
                     {"state": {"type": "CRASHED", "message": "its worker was killed"}, "force": True})
        if state != "COMPLETED":
            # A flow run killed before its eval started stored nothing to resume: run it again.
            started = store.sql("SELECT count(*) FROM runs WHERE name = ?", [name]).rows[0][0]
            params: dict[str, object] = {"config": config(name, **extra, **({"resume": name} if started else {}))}
            if deployment != "demo":
                params["max_drop"] = 1.0
            retry = api.create_flow_run(api.deployment(deployment)["id"], params)
            state = api.wait_terminal(retry["id"], timeout=300)["state_type"]
        logs = "".join((root / f"worker{i}.log").read_text(errors="replace")[-3000:] for i in range(2))
        assert state == "COMPLETED", f"{name}: {state}\n{logs}"
    assert [w for w in workers if w.poll() is None], "the other worker died too"
    assert 0 < killed_at, "the worker was killed before its run stored anything"
    statuses = dict(store.sql("SELECT name, status FROM runs ORDER BY name").rows)
    assert statuses == {"first": "completed", "second": "completed", "third": "completed"}, statuses

    shell = Path(sys.executable).with_name("duckdb")
    catalog = parse_target(lake).catalog
    query = (
        f"ATTACH 'ducklake:{catalog}' AS lake; USE lake; "
        "SELECT r.name, count(*), count(DISTINCT (s.item_id, s.scorer_id)) FROM scores s JOIN runs r USING (run_id) "
        "GROUP BY r.name ORDER BY r.name; "
        "SELECT scorer_id, n_paired FROM compare_runs(run_named('first'), run_named('second')) ORDER BY scorer_id;"
    )
    done = subprocess.run([str(shell), "-json", "-c", query], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    tables = [json.loads(part) for part in done.stdout.replace("]\n[", "]\x00[").split("\x00") if part.strip()]
    cells = {row["name"]: row for row in tables[0]}
    for name in ("first", "second", "third"):
        values = list(cells[name].values())
        assert values[1] == values[2] == N_ROWS * len(SCORERS), cells
    assert [(r["scorer_id"], r["n_paired"]) for r in tables[1]] == [
        ("textual-difference-scorer", N_ROWS), ("tone-scorer", N_ROWS)]
