"""`evalduck run` from the terminal, as a user runs it: one local Prefect server per project folder, started
by the first run, reused by the next, ended by `evalduck stop`; a stale record is recovered; in CI nothing is
left behind. Each test has its own folder and PREFECT_HOME, and finds our processes by that PREFECT_HOME. The
first run starting the folder's server, the second reusing it (same server pid, the flow-run URL printed) and
`evalduck stop` leaving nothing are in test_warm_starter.py, whose folder goes through exactly that. The stale
record's run and the CI run are started in the background when the session is collected (tests/e2e/early.py);
their tests check what they left."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import signal
import stat
import subprocess
import threading
import time
import uuid
from pathlib import Path

import early
import httpx
import pytest
from e2e_harness import CLI, api_client, free_port, none_left, ours, project_folder, wait_for

from evalduck.flows.local.install import start_server, wait_healthy

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


@early.job("first_runs_at_once")
def _first_runs_at_once(context: early.Context) -> tuple[Path, dict[str, str], list[tuple[int, str, str]]]:
    """Four first runs at once in a fresh folder (no server yet), as `evalduck run a & evalduck run b & ...`."""
    cwd, env = context.enter(project_folder(context.root, context.env))
    procs = [subprocess.Popen([CLI, "run", "data.jsonl", "-s", "tone-scorer", "--name", f"at-once-{i}"], cwd=cwd,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        done.append((proc.returncode, out, err))
    return cwd, env, done


@pytest.fixture
def first_runs_at_once() -> tuple[Path, dict[str, str], list[tuple[int, str, str]]]:
    return early.result("first_runs_at_once")  # type: ignore[no-any-return]


def test_first_runs_at_once_share_one_server(
    first_runs_at_once: tuple[Path, dict[str, str], list[tuple[int, str, str]]],
) -> None:
    """The first to get the folder's lock starts its server; the others wait for it and record to it."""
    cwd, env, done = first_runs_at_once
    for code, out, err in done:
        assert code == 0, out + err
    recorded = state(cwd)
    servers = [pid for pid in ours(env) if b"server\0start" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert servers == [recorded["server_pid"]]
    assert sum("Started a local Prefect server" in err for _, _, err in done) == 1
    assert sum("starting a local Prefect server for this folder" in err for _, _, err in done) == 1  # the others wait
    flow_runs = [re.search(r"flow run: (\S+)/runs/flow-run/([0-9a-f-]{36})", out) for _, out, _ in done]
    assert all(found is not None and found[1] == recorded["ui_url"] for found in flow_runs), [o for _, o, _ in done]
    with api_client(str(recorded["api_url"]), cwd / ".evalduck") as api:
        for found in flow_runs:
            assert found is not None
            assert api.get(f"/flow_runs/{found[2]}").json()["state_type"] == "COMPLETED"


def test_the_folder_server_wants_its_credentials(
    first_runs_at_once: tuple[Path, dict[str, str], list[tuple[int, str, str]]],
) -> None:
    """Another local user cannot read or create runs on the folder's server (its worker would run them as
    this user); the credentials are in a file only this user can read."""
    cwd, _, _ = first_runs_at_once
    api_url = str(state(cwd)["api_url"])
    private = cwd / ".evalduck" / "private"
    assert stat.S_IMODE(private.stat().st_mode) == 0o700 and private.stat().st_uid == os.getuid()
    assert stat.S_IMODE((private / "prefect-auth").stat().st_mode) == 0o600
    assert httpx.get(f"{api_url}/health").status_code == 200  # open, for health checks
    anyone = httpx.post(f"{api_url}/deployments/filter", json={})
    assert anyone.status_code == 401
    create = httpx.post(f"{api_url}/deployments/{uuid.uuid4()}/create_flow_run",
                        json={"parameters": {"config": {"target": "os:system"}}})
    assert create.status_code == 401
    wrong = httpx.post(f"{api_url}/flow_runs/filter", json={}, auth=("evalduck", "guess"))
    assert wrong.status_code == 401
    with api_client(api_url, cwd / ".evalduck") as api:
        assert api.post("/flow_runs/filter", json={}).status_code == 200


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
    log = cwd / "cli.log"
    with log.open("wb") as out:  # PYTHONFAULTHANDLER: a CLI stuck before its server prints its threads on SIGABRT
        proc = subprocess.Popen([CLI, "run", "data.jsonl", "-s", "tone-scorer", "--target", "slow_target:answer", "-v"],
                                cwd=cwd, env={**env, "CI": "true", "PYTHONFAULTHANDLER": "1"},
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while len(ours(env)) < 2 and proc.poll() is None and time.monotonic() < deadline:  # the CLI and its server
            time.sleep(0.2)
        if len(ours(env)) < 2:
            if proc.poll() is None:
                proc.send_signal(signal.SIGABRT)
                proc.wait(timeout=30)
            pytest.fail(f"the run's server never started (the CLI: exit {proc.returncode}):\n{log.read_text()[-6000:]}")
        time.sleep(2)  # into the run itself
    finally:
        proc.kill()
        proc.wait()
    assert none_left(env) == []


def test_a_server_killed_mid_run_costs_one_line_once_the_results_are_stored(
    folder: tuple[Path, dict[str, str]],
) -> None:
    """The run's Prefect server is SIGKILLed while the run scores: every cell is stored anyway, so the run
    prints one warning line and its summary, without a traceback, and exits 0 (the timeout guards a hang)."""
    cwd, env = folder
    rows = [{"id": f"q{i}", "input": f"Question {i}?", "output": "A fine answer."} for i in range(60)]
    (cwd / "many.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    started = cwd / "started"
    (cwd / "slow_target.py").write_text(
        "import pathlib, time\n"
        f"def answer(question):\n    pathlib.Path({str(started)!r}).touch()\n    time.sleep(0.1)\n"
        "    return 'A fine answer.'\n")
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    server = start_server("127.0.0.1", port, cwd / "server.log", {"PREFECT_HOME": env["PREFECT_HOME"]})
    try:
        wait_healthy(api_url, 180, server, cwd / "server.log")
        proc = subprocess.Popen(
            [CLI, "run", "many.jsonl", "-s", "tone-scorer", "--target", "slow_target:answer", "--concurrency", "2",
             "--name", "killed-server"],
            cwd=cwd, env={**env, "PREFECT_API_URL": api_url}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for("the run's first target call", lambda: started.exists(), timeout=120, every=0.1)
        os.killpg(server.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=240)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    assert proc.returncode == 0, out + err
    assert "Traceback" not in out + err and "EventsWorker" not in err and "Error logging to API" not in err, err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "went away; all 60 cells of run" in warnings[0], err
    assert "tone-scorer" in out and "results in" in out, out  # the summary
    assert len([line for line in err.splitlines() if line.strip() and "━" not in line]) <= 2, err
