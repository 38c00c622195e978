"""`evalduck serve` / `evalduck stop` as a user types them: idempotent, with clear messages."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from e2e_harness import REPO, Stack

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


def test_serve_never_adopts_a_server_that_is_not_this_folders(tmp_path: Path) -> None:
    """Something answers /health on the port `serve` would use: refused (its worker would run what anyone who
    can reach that server asks for), nothing started, the way to use it named."""
    stranger = http.server.HTTPServer(("127.0.0.1", 0), _AnswersAnything)
    threading.Thread(target=stranger.serve_forever, daemon=True).start()
    try:
        port = stranger.server_address[1]
        state = tmp_path / "state"
        done = evalduck("serve", "--state-dir", str(state), "--port", str(port), cwd=REPO)
    finally:
        stranger.shutdown()
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"another Prefect server, not this folder's, answers at http://127.0.0.1:{port}/api" in done.stdout
    assert "PREFECT_API_URL" in done.stdout and "--port" in done.stdout
    assert not (state / "serve.json").exists() and not (state / "worker.log").exists()


class _AnswersAnything(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"true")

    do_POST = do_GET  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass
