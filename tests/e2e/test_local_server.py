"""`evalduck run` from the terminal, as a user runs it: one local Prefect server per project folder, started
by the first run, reused by the next, ended by `evalduck stop`; a stale record is recovered; in CI nothing is
left behind. Each test has its own folder and PREFECT_HOME, and finds our processes by that PREFECT_HOME. The
first run starting the folder's server, the second reusing it (same server pid, the flow-run URL printed) and
`evalduck stop` leaving nothing are in test_warm_starter.py, whose folder goes through exactly that. The stale
record's run and the CI run are started in the background when the session is collected (tests/e2e/early.py);
their tests check what they left."""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
import time
from pathlib import Path

import early
import pytest
from e2e_harness import CLI, none_left, ours, project_folder

pytestmark = pytest.mark.e2e


def run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([CLI, "run", "data.jsonl", "-s", "tone-scorer", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def state(cwd: Path) -> dict[str, object]:
    return json.loads((cwd / ".evalduck" / "serve.json").read_text())


class _NotOurs(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@early.job("stale_record_run")
def _stale_record_run(context: early.Context) -> tuple[Path, dict[str, str], str, int]:
    """A run in a folder whose record names a process that is gone, on a port something else now answers."""
    cwd, env = context.enter(project_folder(context.root, context.env))
    gone = subprocess.Popen(["true"])
    gone.wait()
    stranger = http.server.HTTPServer(("127.0.0.1", 0), _NotOurs)
    threading.Thread(target=stranger.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{stranger.server_address[1]}/api"
        (cwd / ".evalduck").mkdir()
        (cwd / ".evalduck" / "serve.json").write_text(json.dumps(
            {"api_url": url, "ui_url": url.removesuffix("/api"), "server_pid": gone.pid, "project_dir": str(cwd)}))
        run(cwd, env, "--name", "stale")
    finally:
        stranger.shutdown()
    return cwd, env, url, gone.pid


@early.job("ci_run")
def _ci_run(context: early.Context) -> tuple[dict[str, str], subprocess.CompletedProcess[str], bool]:
    cwd, env = context.enter(project_folder(context.root, context.env))
    proc = run(cwd, {**env, "CI": "true"}, "--name", "ci")
    return env, proc, (cwd / ".evalduck" / "serve.json").exists()


@pytest.fixture
def stale_record_run() -> tuple[Path, dict[str, str], str, int]:
    return early.result("stale_record_run")  # type: ignore[no-any-return]


@pytest.fixture
def ci_run() -> tuple[dict[str, str], subprocess.CompletedProcess[str], bool]:
    return early.result("ci_run")  # type: ignore[no-any-return]


def test_a_stale_record_is_recovered(stale_record_run: tuple[Path, dict[str, str], str, int]) -> None:
    """The record named a process that is gone, on a port something else answered: neither is used."""
    cwd, env, url, gone_pid = stale_record_run
    recovered = state(cwd)
    assert recovered["api_url"] != url and recovered["server_pid"] != gone_pid
    assert recovered["server_pid"] in ours(env)


def test_in_ci_a_run_leaves_nothing_behind(ci_run: tuple[dict[str, str], subprocess.CompletedProcess[str], bool]) -> None:
    env, proc, recorded = ci_run
    assert "a temporary server for this run" in proc.stderr
    assert not recorded
    assert none_left(env) == []


def test_a_killed_ci_run_leaves_no_server_behind(folder: tuple[Path, dict[str, str]]) -> None:
    """SIGKILL mid-run: the run's server (ours, armed to die with its parent) goes too."""
    cwd, env = folder
    (cwd / "slow_target.py").write_text("import time\ndef answer(question):\n    time.sleep(60)\n    return 'late'\n")
    proc = subprocess.Popen([CLI, "run", "data.jsonl", "-s", "tone-scorer", "--target", "slow_target:answer"],
                            cwd=cwd, env={**env, "CI": "true"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(ours(env)) < 2 and time.monotonic() < deadline:  # the CLI and its server
            time.sleep(0.2)
        assert len(ours(env)) >= 2, "the run's server never started"
        time.sleep(2)  # into the run itself
    finally:
        proc.kill()
        proc.wait()
    assert none_left(env) == []
