"""evalduck in a user's own project: a folder outside the checkout, evalduck `pip install`ed from its wheel
into the folder's venv (conftest.py), and a ``flows/`` package of the user's own (with a Prefect flow of
theirs) in it, as Prefect projects often have. Every command runs in a subprocess from that folder, as a
user types it. One folder, and so one folder server (started by the first run), for the whole module."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from user_install import CHECKOUT, Installed

pytestmark = pytest.mark.e2e  # a real Prefect server and worker, ~1 minute for the module

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
import json
with open("side-effects.txt", "a") as out:
    out.write("ran\\n")
import flows
import prefect
from evalduck import run_evals
result = run_evals(data="data.jsonl", scorers=["tone-scorer"], name="script", quiet=True)
print(json.dumps({"flows": flows.__file__, "mine": flows.MINE, "users_flow": isinstance(flows.hello, prefect.Flow),
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


def test_stop_leaves_no_process_of_the_folder(project: Project) -> None:
    assert folder_processes(project.root, project.env["PREFECT_HOME"]), "nothing of the folder ran before stop"
    project.evalduck("stop")
    deadline = time.monotonic() + 20
    while (left := folder_processes(project.root, project.env["PREFECT_HOME"])) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, "\n".join(left)
    assert not (project.root / ".evalduck" / "serve.json").exists()
