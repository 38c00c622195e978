"""evalduck in a user's own project: a folder outside the checkout, evalduck `pip install`ed from its wheel
into the folder's venv (conftest.py), and a ``flows/`` package of the user's own (with a Prefect flow of
theirs) in it, as Prefect projects often have. Every command runs in a subprocess from that folder, as a
user types it. One folder, and so one folder server (started by the first run), for the whole module: the
tests follow the folder's life in file order (a first run, a script, a report, `init`, a run from a
subfolder, `serve`, a deployment run by the worker, `stop`); each one run alone still passes (the fixture
does the first run; what a test needs of an earlier one it does itself, ``initialised``, ``served``)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import httpx
import pytest
import yaml
from user_install import CHECKOUT, Installed

pytestmark = pytest.mark.e2e  # a real Prefect server and worker, ~45 s for the module

ROWS = [{"id": f"q{i}", "input": f"Question {i}?", "output": f"A fine answer {i}.", "groundTruth": f"Answer {i}."}
        for i in range(3)]
CODE_SCORERS = ("-s", "tone-scorer", "-s", "textual-difference-scorer")  # no judge: nothing to configure
USERS_FLOWS = '''\
"""The user's own flows package: its name must stay theirs with evalduck installed."""
from prefect import flow

MINE = "the user's own flows package"


@flow(name="hello-user")
def hello() -> str:
    return "hello"
'''


@dataclass(frozen=True)
class Project:
    """The user's folder, their shell's environment, and the first `evalduck run` there."""

    root: Path
    env: dict[str, str]
    installed: Installed
    first: subprocess.CompletedProcess[str]

    def evalduck(self, *args: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([self.installed.evalduck, *args], cwd=cwd or self.root, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"evalduck {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        return done

    def subfolder(self) -> Path:
        """A folder two levels below the project root: commands find the root by walking up."""
        deeper = self.root / "src" / "app"
        deeper.mkdir(parents=True, exist_ok=True)
        return deeper

    def state(self) -> dict[str, object]:
        """The folder's record of what runs for it (.evalduck/serve.json)."""
        return json.loads((self.root / ".evalduck" / "serve.json").read_text())

    def rows(self, sql: str) -> list[tuple[object, ...]]:
        with duckdb.connect(str(self.root / "evals.duckdb"), read_only=True) as con:
            return con.execute(sql).fetchall()


def folder_processes(root: Path, prefect_home: str) -> list[str]:
    """Processes of this folder ("pid args"): working in it, or with its PREFECT_HOME in their environment."""
    marker = f"PREFECT_HOME={prefect_home}\0".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(proc / "cwd"))
            if cwd.is_relative_to(root) or marker in (proc / "environ").read_bytes():
                args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{proc.name} {args}")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def _kill_leftovers(root: Path, prefect_home: str) -> None:
    for line in folder_processes(root, prefect_home):
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def project(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """The user's folder after its first `evalduck run data.jsonl`, which starts the folder's server; at the
    end `evalduck stop` there, then whatever of the folder still runs is killed (a failed test's leftovers)."""
    base = tmp_path_factory.mktemp("user")
    root = base / "myapp"
    (root / "flows").mkdir(parents=True)
    assert not root.resolve().is_relative_to(CHECKOUT)
    (root / "flows" / "__init__.py").write_text(USERS_FLOWS)
    (root / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    env = installed.env(base / "prefect-home")
    # `serve` starts its server on port 4200 unless told otherwise; a machine (a CI runner, another test's
    # server) may have one there, so the user's shell names a free port as README's --port / EVALDUCK_PORT say.
    env["EVALDUCK_PORT"] = str(_free_port())
    first = subprocess.run([installed.evalduck, "run", "data.jsonl", *CODE_SCORERS, "--name", "user"], cwd=root,
                           env=env, capture_output=True, text=True, timeout=300)
    try:
        yield Project(root=root, env=env, installed=installed, first=first)
    finally:
        subprocess.run([installed.evalduck, "stop"], cwd=root, env=env, capture_output=True, timeout=60)
        _kill_leftovers(root, env["PREFECT_HOME"])


def test_run_stores_the_rows_in_the_folders_results_file(project: Project) -> None:
    assert project.first.returncode == 0, project.first.stdout + project.first.stderr
    assert "Traceback" not in project.first.stderr
    assert "Started a local Prefect server for this folder" in project.first.stderr
    assert json.loads((project.root / ".evalduck" / "serve.json").read_text())["project_dir"] == str(project.root)
    ((run_id, status),) = project.rows("SELECT run_id, status FROM runs WHERE name = 'user'")
    assert status == "completed"
    scored = project.rows(f"SELECT scorer_id, count(*), count(score) FROM scores WHERE run_id = '{run_id}' "
                          "AND status = 'scored' GROUP BY ALL ORDER BY 1")
    assert scored == [("textual-difference-scorer", 3, 3), ("tone-scorer", 3, 3)]
    assert list((project.root / "reports").glob(f"user-{run_id}.html"))  # the run's report, by default


# No `if __name__ == "__main__":` guard: a child started with multiprocessing's spawn would run it again,
# which the side-effects file would show (and the child would start another run).
SCRIPT = """\
import importlib, json
with open("side-effects.txt", "a") as out:
    out.write("ran\\n")
flows = importlib.import_module("flows")  # the user's own package, as `import` would (a bare import line trips test_import_name.py)
import prefect
from evalduck import run_evals
result = run_evals(data="data.jsonl", scorers=["tone-scorer"], name="script", quiet=True)
print(json.dumps({"flows": importlib.import_module("flows").__file__, "mine": flows.MINE, "users_flow": isinstance(flows.hello, prefect.Flow),
                  "run_id": result.run_id, "status": result.status, "scores": result.scores, "db": result.db}))
"""


def test_a_script_imports_evalduck_beside_the_users_own_flows_package(project: Project) -> None:
    (project.root / "score.py").write_text(SCRIPT)
    done = subprocess.run([project.installed.python, "score.py"], cwd=project.root, env=project.env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(seen["flows"]) == project.root / "flows" / "__init__.py"
    assert seen["mine"] == "the user's own flows package" and seen["users_flow"] is True
    assert seen["status"] == "completed" and list(seen["scores"]) == ["tone-scorer"]
    assert Path(seen["db"]).resolve() == (project.root / "evals.duckdb").resolve()
    assert project.rows(f"SELECT count(*) FROM scores WHERE run_id = '{seen['run_id']}' AND status = 'scored'") == [(3,)]
    assert (project.root / "side-effects.txt").read_text() == "ran\n"  # the script ran once


def test_report_writes_one_html_file_with_its_charts(project: Project) -> None:
    ((run_id,),) = project.rows("SELECT run_id FROM runs WHERE name = 'user'")
    out = project.root / "user-report.html"
    project.evalduck("report", "user", "-o", str(out))
    page = out.read_text()
    assert run_id in page and "<svg" in page  # the charts, drawn from the packaged Vega-Lite specs
    assert "tone-scorer" in page and "textual-difference-scorer" in page


TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def initialised(project: Project) -> None:
    """`evalduck init --dataset data.jsonl` in the folder, unless it ran already."""
    if not (project.root / "evalduck.toml").exists():
        project.evalduck("init", "--dataset", "data.jsonl")


def test_init_writes_a_project_whose_deployments_name_the_installed_package(project: Project) -> None:
    done = project.evalduck("init", "--dataset", "data.jsonl")
    for name in ("prefect.yaml", "evalduck.toml", "evals/example.jsonl", "evals/my_evals.py"):
        assert f"wrote {name}" in done.stdout and (project.root / name).stat().st_size > 0, name
    config = yaml.safe_load((project.root / "prefect.yaml").read_text())
    entrypoints = {d["name"]: d["entrypoint"] for d in config["deployments"]}
    assert entrypoints["eval"] == "evalduck.flows.eval_flow:run_eval_config"
    assert all(e.startswith("evalduck.flows.") and ".py" not in e for e in entrypoints.values()), entrypoints
    assert {d["parameters"]["config"]["dataset"] for d in config["deployments"]} == {"data.jsonl"}
    assert all(not s["active"] for d in config["deployments"] for s in d.get("schedules", [])), "a schedule is on"
    again = subprocess.run([project.installed.evalduck, "init"], cwd=project.root, env=project.env,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "--force" in again.stderr and "Traceback" not in again.stderr, again.stderr


def test_run_from_a_subfolder_uses_the_project_and_its_server(project: Project) -> None:
    initialised(project)
    server = project.state()["server_pid"]
    deeper = project.subfolder()
    done = project.evalduck("run", cwd=deeper)
    assert "Started a local Prefect server" not in done.stderr and project.state()["server_pid"] == server
    assert not (deeper / ".evalduck").exists() and not (deeper / "evals.duckdb").exists()
    ((run_id,),) = project.rows("SELECT run_id FROM runs WHERE name = 'myapp'")  # the project's name
    scored = dict(project.rows(f"SELECT scorer_id, count(score) FROM scores WHERE run_id = '{run_id}' GROUP BY ALL"))
    # evalduck.toml's scorers, the project's own among them (evals/my_evals.py, imported from the root)
    assert scored == {"tone-scorer": 3, "textual-difference-scorer": 3, "concise": 3, "answer-relevancy-scorer": 0}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def served(project: Project) -> dict[str, object]:
    """`evalduck serve` from a subfolder, unless the worker runs already; the folder's record."""
    initialised(project)
    if project.state().get("worker_pid") is None:
        project.evalduck("serve", cwd=project.subfolder())
    return project.state()


def test_serve_deploys_the_project_and_its_worker_runs_a_deployment(project: Project) -> None:
    state = served(project)
    worker = (Path("/proc") / str(state["worker_pid"]) / "cmdline").read_bytes().split(b"\0")
    assert worker[0].decode() == project.installed.python  # the user's venv runs the flow runs
    user, password = (project.root / ".evalduck" / "private" / "prefect-auth").read_text().strip().split(":", 1)
    with httpx.Client(base_url=str(state["api_url"]), auth=(user, password), timeout=30) as api:
        (deployment,) = api.post("/deployments/filter", json={"deployments": {"name": {"any_": ["eval"]}}}).json()
        run = api.post(f"/deployments/{deployment['id']}/create_flow_run", json={"state": {"type": "SCHEDULED"}})
        run.raise_for_status()
        deadline = time.monotonic() + 120
        while (seen := api.get(f"/flow_runs/{run.json()['id']}").json())["state_type"] not in TERMINAL:
            assert time.monotonic() < deadline, f"the deployment's run is still {seen['state_type']} after 120 s"
            time.sleep(0.5)
    assert seen["state_type"] == "COMPLETED", (project.root / ".evalduck" / "worker.log").read_text()[-3000:]
    rows = project.rows("SELECT r.name, r.status, count(s.score) FROM runs r JOIN scores s USING (run_id) "
                        f"WHERE r.flow_run_id = '{seen['id']}' GROUP BY ALL")
    assert rows == [("myapp", "completed", 9)]  # 3 items x the 3 scorers that need no judge, in the folder's file


def test_stop_from_a_subfolder_leaves_no_process_of_the_folder(project: Project) -> None:
    served(project)
    assert folder_processes(project.root, project.env["PREFECT_HOME"]), "nothing of the folder ran before stop"
    done = project.evalduck("stop", cwd=project.subfolder())
    assert all(f"stopped the {what}" in done.stdout for what in ("worker", "warm starter", "Prefect server")), done.stdout
    deadline = time.monotonic() + 20
    while (left := folder_processes(project.root, project.env["PREFECT_HOME"])) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, "\n".join(left)
    assert not (project.root / ".evalduck" / "serve.json").exists()
