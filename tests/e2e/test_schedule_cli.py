"""`evalduck schedule enable|disable NAME` against the session's real installation (the `stack`
fixture: its server, found through the folder's state as a user's `evalduck serve` left it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from e2e_harness import CLI, Stack

pytestmark = pytest.mark.e2e


def _schedule(stack: Stack, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING")}
    env["EVALDUCK_STATE_DIR"] = str(stack.options.state_dir)
    return subprocess.run([CLI, "schedule", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def _active(stack: Stack, name: str) -> list[bool]:
    return [s["active"] for s in stack.api.deployment(name)["schedules"]]


def test_schedule_enable_and_disable_switch_a_deployments_schedules(stack: Stack, tmp_path: Path) -> None:
    assert _active(stack, "nightly") == [False]  # prefect.yaml deploys it off
    try:
        on = _schedule(stack, tmp_path, "enable", "nightly")
        assert on.returncode == 0, on.stderr
        assert "nightly: schedule on (cron 0 2 * * * UTC)" in on.stdout
        assert _active(stack, "nightly") == [True]
    finally:
        off = _schedule(stack, tmp_path, "disable", "nightly")
    assert off.returncode == 0, off.stderr
    assert _active(stack, "nightly") == [False]
    unknown = _schedule(stack, tmp_path, "enable", "nigthly")
    assert unknown.returncode == 1
    (line,) = unknown.stderr.strip().splitlines()
    assert "no deployment 'nigthly'" in line and "deployments: demo, nightly, smoke" in line, line
