"""`evalduck serve` / `evalduck stop` as a user types them: idempotent, with clear messages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from e2e_harness import Stack

pytestmark = pytest.mark.e2e

EVALDUCK = str(Path(sys.executable).with_name("evalduck"))


def evalduck(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALDUCK, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_stop_with_nothing_started_says_so(tmp_path: Path) -> None:
    done = evalduck("stop", "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Nothing to stop" in done.stdout


def test_serve_outside_the_project_is_refused(tmp_path: Path) -> None:
    done = evalduck("serve", "--project-dir", str(tmp_path), "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    assert done.returncode == 2
    assert "holds no prefect.yaml" in done.stderr
    assert not (tmp_path / "state").exists()


def test_serve_again_reuses_the_running_installation(stack: Stack) -> None:
    options = stack.options
    done = evalduck(
        "serve", "--state-dir", str(options.state_dir), "--port", str(options.port), cwd=options.project_dir
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"already serving: worker pid {stack.state.worker_pid}" in done.stdout
    assert stack.state.ui_url in done.stdout


def test_a_foreign_state_file_is_reported_not_trusted(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "serve.json").write_text('{"worker_pid": 1}')
    done = evalduck("stop", "--state-dir", str(state), cwd=tmp_path)
    assert done.returncode == 1
    assert "is not a state file written by `evalduck serve`" in done.stdout
    assert (state / "serve.json").exists()
