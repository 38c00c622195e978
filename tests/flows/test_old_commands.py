"""Commands an existing installation may still name after the move of flows/ into rooms (issue 25): a work pool
made before it runs ``python -m evalduck.flows.warm.flow_run`` until the next `evalduck serve` rewrites the
pool's command (flows/local/install/pool.py)."""

from __future__ import annotations

import subprocess
import sys

import evalduck.flows.local.warm.flow_run as current
import evalduck.flows.warm.flow_run as old
from evalduck.flows.local.install.pool import flow_run_command


def test_the_old_flow_run_command_runs_the_current_one() -> None:
    assert old.main is current.main


def test_a_work_pool_gets_the_current_command() -> None:
    assert flow_run_command().endswith("-m evalduck.flows.local.warm.flow_run")


def test_the_old_command_starts_as_a_module_and_reaches_prefects_engine(tmp_path) -> None:
    """Without a flow run id Prefect's engine refuses; what matters is that the old path still imports and runs."""
    done = subprocess.run([sys.executable, "-m", "evalduck.flows.warm.flow_run"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                                                      "DO_NOT_TRACK": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                                                      "HOME": str(tmp_path)})
    assert "ModuleNotFoundError" not in done.stderr and "prefect" in done.stderr, done.stderr[-2000:]
