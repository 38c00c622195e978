"""`evalduck run` through the folder's warm starter, as a user runs it: real CLI processes in one folder with its
own PREFECT_HOME, shared by the tests of this module in order (its server takes ~20 s to start; the last test
stops it). The target of these runs records its process's pid and parent pid, which proves where it ran: a
child of the starter (its parent is the recorded starter pid) or the CLI process itself."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import early
import pytest
from e2e_harness import CLI, api_auth, none_left, ours, project_folder, wait_for

from flows.warm.wire import socket_path

pytestmark = pytest.mark.e2e

# Async, so that a Ctrl-C interrupts its sleep: a sync target's thread runs to its end, in-process as well.
TARGET = '''import asyncio, json, os
VERSION = {version!r}
async def answer(question):
    with open("where.jsonl", "a") as out:
        out.write(json.dumps({{"pid": os.getpid(), "ppid": os.getppid(), "version": VERSION}}) + "\\n")
    await asyncio.sleep({sleep})
    return "An answer."
'''


def write_target(cwd: Path, version: str, sleep: float = 0.0) -> None:
    path = cwd / "where_target.py"
    path.write_text(TARGET.format(version=version, sleep=sleep))
    stamp = time.time() + len(version)  # a new mtime even within the file system's time resolution
    os.utime(path, (stamp, stamp))


def where(cwd: Path) -> list[dict[str, object]]:
    path = cwd / "where.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def cli(cwd: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([CLI, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(cwd: Path, env: dict[str, str], *args: str) -> tuple[int, subprocess.CompletedProcess[str]]:
    """A target run of the dataset: the CLI's pid and its outcome."""
    proc = cli(cwd, env, "run", "data.jsonl", "-s", "tone-scorer", "--target", "where_target:answer", "--no-cache",
               *args)
    out, err = proc.communicate(timeout=300)
    return proc.pid, subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def record(cwd: Path) -> dict[str, object]:
    return json.loads((cwd / ".evalduck" / "serve.json").read_text())


def warm(cwd: Path) -> int:
    """The starter's pid, once it listens (it preloads after the run that started it)."""
    starter = int(record(cwd)["starter_pid"])  # type: ignore[arg-type]
    wait_for("the warm starter to listen", lambda: "listening on" in _log(cwd) or None, timeout=180,
             every=0.2)
    return starter


def renderer_pid(cwd: Path) -> int:
    """The starter's current chart renderer (the last one its log names)."""
    return int(re.findall(r"forked the chart renderer (\d+)", _log(cwd))[-1])


def _log(cwd: Path) -> str:
    log = cwd / ".evalduck" / "warm.log"
    return log.read_text() if log.exists() else ""


@early.job("warm_folder")
def _first_run(context: early.Context) -> tuple[Path, dict[str, str], subprocess.CompletedProcess[str]]:
    """The folder's first run, which starts its server and warm starter; ended at the session's end."""
    cwd, env = context.enter(project_folder(context.root, context.env))
    write_target(cwd, "one")
    _, first = run(cwd, env)
    return cwd, env, first


@pytest.fixture(scope="module")
def warm_folder() -> tuple[Path, dict[str, str]]:
    """The folder after its first run, which started its server and warm starter (in the background, when
    the session was collected: tests/e2e/early.py)."""
    cwd, env, first = early.result("warm_folder")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Started a local Prefect server for this folder" in first.stderr
    assert "and a warm starter for the next runs" in first.stderr
    started = record(cwd)
    assert started["prefect_home"] == env["PREFECT_HOME"] and started["server_pid"] in ours(env)
    assert f"{started['ui_url']}/runs/flow-run/" in first.stdout  # the run's page on the folder's server
    return cwd, env


def test_later_runs_fork_from_the_warm_starter_and_see_a_changed_target(warm_folder: tuple[Path, dict[str, str]]) -> None:
    cwd, env = warm_folder
    starter = warm(cwd)
    assert socket_path(cwd / ".evalduck").exists()
    seen = len(where(cwd))

    server = record(cwd)["server_pid"]
    _, second = run(cwd, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert {r["ppid"] for r in where(cwd)[seen:]} == {starter}, "the target ran in a child of the starter"
    assert record(cwd)["server_pid"] == server and "Started a local Prefect server" not in second.stderr  # reused
    assert f"{record(cwd)['ui_url']}/runs/flow-run/" in second.stdout
    assert "flow run: http" in second.stdout and "results in" in second.stdout  # the same output as in-process
    child = where(cwd)[-1]["pid"]
    assert f"drew a chart for pid {child}" in _log(cwd), "the run's charts came from the folder's renderer"

    write_target(cwd, "two")
    seen = len(where(cwd))
    _, third = run(cwd, env)
    assert third.returncode == 0, third.stdout + third.stderr
    assert {(r["ppid"], r["version"]) for r in where(cwd)[seen:]} == {(starter, "two")}
    assert "refused" not in _log(cwd)


def test_exit_codes_are_the_runs(warm_folder: tuple[Path, dict[str, str]]) -> None:
    cwd, env = warm_folder
    warm(cwd)
    usage = subprocess.run([CLI, "run", "data.jsonl", "--concurrency", "0"], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=120)
    assert usage.returncode == 2 and "--concurrency" in usage.stderr
    (cwd / "bad.jsonl").write_text('{"id": "a", "input": "q", "output": "o"}\nnot json\n')
    bad = subprocess.run([CLI, "run", "bad.jsonl", "-s", "tone-scorer"], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 1 and "bad.jsonl" in bad.stderr
    assert "refused" not in _log(cwd)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_ending_the_client_ends_its_run(warm_folder: tuple[Path, dict[str, str]], how: signal.Signals) -> None:
    cwd, env = warm_folder
    starter = warm(cwd)
    write_target(cwd, f"slow-{how.name}", sleep=120)
    proc = cli(cwd, env, "run", "data.jsonl", "-s", "tone-scorer", "--target", "where_target:answer", "--no-cache",
               "--concurrency", "1")
    child = wait_for("the run's target to start", lambda: next(
        (int(r["pid"]) for r in where(cwd) if r["version"] == f"slow-{how.name}"), None), timeout=120, every=0.2)  # type: ignore[arg-type]
    assert where(cwd)[-1]["ppid"] == starter
    proc.send_signal(how)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    wait_for("the run child to end", lambda: not Path(f"/proc/{child}").exists() or None, timeout=30, every=0.2)
    assert starter in ours(env)  # it serves the next run
    write_target(cwd, "one")


def test_in_ci_runs_never_use_the_starter(warm_folder: tuple[Path, dict[str, str]]) -> None:
    cwd, env = warm_folder
    warm(cwd)
    # CI only: --ephemeral and EVALDUCK_EPHEMERAL=1 take the same branch of flows.launch (flows.folder.ephemeral).
    # The run records to the folder's server through PREFECT_API_URL, which flows.launch does not read, so it
    # starts no temporary server of its own (test_local_server.py proves a CI run's temporary server).
    pid, proc = run(cwd, {**env, "CI": "true", "PREFECT_API_URL": str(record(cwd)["api_url"]),
                          "PREFECT_API_AUTH_STRING": api_auth(cwd / ".evalduck")})  # a named server: its credentials
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert where(cwd)[-1]["pid"] == pid


def test_a_stale_starter_record_is_replaced(warm_folder: tuple[Path, dict[str, str]]) -> None:
    cwd, env = warm_folder
    state = record(cwd)
    os.kill(int(state["starter_pid"]), signal.SIGKILL)  # type: ignore[arg-type]
    gone = subprocess.Popen(["true"])
    gone.wait()
    (cwd / ".evalduck" / "serve.json").write_text(json.dumps({**state, "starter_pid": gone.pid}))
    (cwd / ".evalduck" / "warm.log").unlink()

    pid, second = run(cwd, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert where(cwd)[-1]["pid"] == pid, "no starter answered: the run ran in the CLI's own process"
    replaced = record(cwd)["starter_pid"]
    assert replaced not in (gone.pid, state["starter_pid"]) and replaced in ours(env)
    assert warm(cwd) == replaced
    _, third = run(cwd, env)
    assert third.returncode == 0 and where(cwd)[-1]["ppid"] == replaced


def test_stop_ends_the_starter_and_leaves_nothing_of_ours(warm_folder: tuple[Path, dict[str, str]]) -> None:
    cwd, env = warm_folder
    warm(cwd)
    renderer = renderer_pid(cwd)
    assert renderer in ours(env)
    stopped = subprocess.run([CLI, "stop"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert stopped.returncode == 0 and "the warm starter (pid" in stopped.stdout, stopped.stdout + stopped.stderr
    assert none_left(env) == [] and renderer not in ours(env)
    assert not (cwd / ".evalduck" / "serve.json").exists()
    assert not socket_path(cwd / ".evalduck").exists() and not socket_path(cwd / ".evalduck", "render").exists()
