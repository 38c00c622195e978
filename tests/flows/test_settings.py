"""Default paths: one function each, read when called, used by the store, the flow and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalduck.flows.store
from evalduck.flows import settings
from evalduck.flows.project import defaults


def test_db_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(settings.DB_ENV, raising=False)
    assert defaults.default_db_path() == Path("evals.duckdb")
    monkeypatch.setenv(settings.DB_ENV, str(tmp_path / "x.duckdb"))
    assert defaults.default_db_path() == tmp_path / "x.duckdb"
    assert evalduck.flows.store.default_db_path is defaults.default_db_path


def test_cache_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(settings.CACHE_DIR_ENV, raising=False)
    assert defaults.default_cache_dir() == Path(".evalduck/cache")
    assert defaults.default_cache_dir(tmp_path) == tmp_path / ".evalduck" / "cache"  # serve: the project folder
    monkeypatch.setenv(settings.CACHE_DIR_ENV, "elsewhere")
    assert defaults.default_cache_dir(tmp_path) == Path("elsewhere")


def test_cli_db_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evalduck.flows.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(settings.DB_ENV, raising=False)
    done = CliRunner().invoke(app, ["runs"])  # no results file yet: said, and none is created
    assert done.exit_code == 2, done.output
    assert f"{settings.DEFAULT_DB_FILE}" in done.output and "no such results file" in done.output
    assert not (tmp_path / settings.DEFAULT_DB_FILE).exists()
    monkeypatch.setenv(settings.DB_ENV, "other.duckdb")
    assert "other.duckdb" in CliRunner().invoke(app, ["runs"]).output


def test_one_judge_model_variable() -> None:
    from evalduck.flows.inputs.registry import no_judge_message

    assert evalduck.scorers.JUDGE_MODEL_ENV == "EVALDUCK_JUDGE_MODEL"
    assert evalduck.scorers.JUDGE_MODEL_ENV in no_judge_message("x")


def test_serve_worker_gets_the_same_variables(tmp_path: Path) -> None:
    from evalduck.flows.local.folder import STATE_DIR_ENV
    from evalduck.flows.local.install import ServeOptions, worker_env

    options = ServeOptions(project_dir=tmp_path, state_dir=tmp_path / "state", db_path=tmp_path / "e.duckdb",
                           cache_dir=tmp_path / "cache", host="127.0.0.1", port=4200, api_url=None,
                           prefect_file=None, health_timeout=1.0)
    assert worker_env(options) == {settings.DB_ENV: str(tmp_path / "e.duckdb"),
                                   settings.CACHE_DIR_ENV: str(tmp_path / "cache"),
                                   STATE_DIR_ENV: str(tmp_path / "state")}  # where flow runs find the warm starter


def test_importing_the_flows_changes_nothing_in_the_process(tmp_path: Path) -> None:
    """No environment variable, exit hook or logging filter of ours comes from an import; the entry points
    apply the defaults (here: the first use of ``evalduck.flows.run_evals``)."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, logging, os\n"
        "before = dict(os.environ)\n"
        "import evalduck.flows.eval_flow, evalduck.flows.regression_flow, evalduck.flows.cli.run, evalduck.flows.judge.process as jp\n"
        "imported = {k: v for k, v in os.environ.items() if before.get(k) != v}\n"
        "filters = logging.getLogger('prefect.task_runs').filters\n"
        "from evalduck import run_evals\n"
        "used = sorted(k for k in os.environ if k not in before)\n"
        "print(json.dumps([imported, len(filters), jp._exit_hook, used]))\n"
    )
    keys = set(settings.PROCESS_ENV_DEFAULTS) | {"PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"}
    env = {k: v for k, v in os.environ.items() if k not in keys}
    env["PREFECT_HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported, filters, exit_hook, used = json.loads(done.stdout.splitlines()[-1])
    assert imported == {} and filters == 0 and exit_hook == []
    assert used == []  # evalduck.flows.eval_flow was imported first, so prefect was too: too late to apply them
    fresh = "import os\nfrom evalduck import run_evals\nprint(os.environ.get('PREFECT_SERVER_ANALYTICS_ENABLED'))\n"
    done = subprocess.run([sys.executable, "-c", fresh], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split()[-1] == "false", done.stderr  # the public name applies them
