"""`evalduck init` and the project it makes, as a user runs them: the real `evalduck` command in a
subprocess, in a temporary folder outside this checkout; runs are ephemeral (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib import import_module
from pathlib import Path

import pytest
import yaml

CLI = str(Path(sys.executable).with_name("evalduck"))
CHECKOUT = Path(__file__).resolve().parents[2]
FILES = ("prefect.yaml", "evalduck.toml", "evals/example.jsonl", "evals/README.md", "evals/my_evals.py")


def evalduck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EVALDUCK_DB", "EVALDUCK_CACHE_DIR", "EVALDUCK_STATE_DIR")}
    return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "my-app"
    root.mkdir()
    done = evalduck(root, "init")
    assert done.returncode == 0, done.stderr
    return root


def test_init_writes_the_files_refuses_a_second_time_and_force_overwrites(project: Path) -> None:
    assert all((project / name).is_file() for name in FILES)
    mine = project / "evals" / "my_evals.py"
    mine.write_text("# my edits\n")
    again = evalduck(project, "init")
    assert again.returncode == 1
    (line,) = again.stderr.strip().splitlines()
    assert f"{project / 'prefect.yaml'} exists" in line and "--force" in line, line
    assert mine.read_text() == "# my edits\n"  # nothing was written
    forced = evalduck(project, "init", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "create_scorer" in mine.read_text()
    for name in FILES:
        assert f"wrote {name}" in forced.stdout
    assert all(f"evalduck {cmd}" in forced.stdout for cmd in ("run", "show", "serve"))


def _entrypoint_flow(entrypoint: str) -> object:
    """What `prefect deploy` loads for an entrypoint: a module path, imported, and its flow."""
    from prefect import Flow

    module, _, name = entrypoint.partition(":")
    assert not module.endswith(".py"), entrypoint  # a module path, not a file of one checkout
    flow = getattr(import_module(module), name)
    assert isinstance(flow, Flow), entrypoint
    return flow


@pytest.mark.parametrize("where", ["init", "checkout"])
def test_prefect_yaml_entrypoints_import_and_schedules_are_off(tmp_path: Path, where: str) -> None:
    if where == "init":
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "mine.jsonl").write_text('{"input": "q", "output": "a"}\n')
        done = evalduck(tmp_path, "init", "--dataset", "data/mine.jsonl", "--judge-model", "openai/judge-x")
        assert done.returncode == 0, done.stderr
        config = yaml.safe_load((tmp_path / "prefect.yaml").read_text())
        assert 'judge_model = "openai/judge-x"' in (tmp_path / "evalduck.toml").read_text()
        assert 'dataset = "data/mine.jsonl"' in (tmp_path / "evalduck.toml").read_text()
    else:
        config = yaml.safe_load((CHECKOUT / "prefect.yaml").read_text())
    schedules = []
    for deployment in config["deployments"]:
        _entrypoint_flow(deployment["entrypoint"])
        schedules += deployment.get("schedules") or []
        if where == "init":
            assert deployment["parameters"]["config"]["dataset"] == "data/mine.jsonl"
    assert schedules and all(s["active"] is False for s in schedules)
    (step,) = config["pull"]
    assert step["prefect.deployments.steps.set_working_directory"]["directory"] == "{{ project-dir.stdout }}"


def test_run_and_run_evals_from_a_subfolder_use_the_project_file(project: Path) -> None:
    """No arguments: the dataset, scorers (the project's own among them), name, db and cache folder come
    from evalduck.toml; the results file and the folder's state are at the root, not in the subfolder."""
    sub = project / "evals"
    done = evalduck(sub, "run")
    assert done.returncode == 0, done.stderr
    assert f"results in {project / 'evals.duckdb'}" in done.stdout
    assert "concise" in done.stdout and "my-app" in done.stdout
    assert (project / ".evalduck" / "cache").is_dir()
    assert not (sub / "evals.duckdb").exists() and not (sub / ".evalduck").exists()
    shown = evalduck(sub, "show", "my-app")
    assert shown.returncode == 0 and "concise" in shown.stdout, shown.stderr
    script = sub / "check.py"
    script.write_text(textwrap.dedent("""\
        import json
        from evalduck import run_evals
        result = run_evals(quiet=True)
        print(json.dumps({"name": result.name, "db": str(result.db), "scorers": sorted(result.summary["scorers"])}))
    """))
    called = subprocess.run([sys.executable, str(script)], cwd=sub, capture_output=True, text=True, timeout=120)
    assert called.returncode == 0, called.stderr
    seen = json.loads(called.stdout.strip().splitlines()[-1])
    assert seen["name"] == "my-app" and seen["db"] == str(project / "evals.duckdb")
    assert "concise" in seen["scorers"]


def test_a_bad_key_stops_every_command_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "evalduck.toml").write_text("concurrency = 4\njudge_modle = 'openai/x'\n")
    (tmp_path / "sub").mkdir()
    done = evalduck(tmp_path / "sub", "runs")
    assert done.returncode == 2
    first = done.stderr.strip().splitlines()[0]
    assert first.startswith(f"error: {tmp_path / 'evalduck.toml'}: unknown key `judge_modle`"), first
    assert "did you mean 'judge_model'?" in first


def test_serve_outside_a_project_points_at_init(tmp_path: Path) -> None:
    done = evalduck(tmp_path, "serve")
    assert done.returncode == 2
    assert "no prefect.yaml in" in done.stderr and "evalduck init" in done.stderr
    assert not (tmp_path / ".evalduck").exists()
