"""The folder's processes clean up after themselves, as a user runs things: real `evalduck` processes in fresh
folders with their own PREFECT_HOME.

The slow parts (three first runs, each starting a Prefect server) are early jobs (tests/e2e/early.py): a
folder with a short idle timeout runs two back-to-back runs, `evalduck status`, and a run longer than the
timeout, noting which processes lived through it; two folders with their own registry of folders (their own
XDG_RUNTIME_DIR) just run once. The tests then check what the jobs recorded, and what is left (nothing, once
the idle timeout has passed). The target records its process's pid and parent pid, which proves where a run
ran: a child of the warm starter (its parent is the recorded starter pid) or the CLI process itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import early
import pytest
from e2e_harness import CLI, none_left, ours, project_folder, wait_for

from evalduck.flows.local.warm.wire import socket_path

pytestmark = pytest.mark.e2e

IDLE_S = 6
SLOW_S = 10  # longer than the idle timeout: the run holds the folder's processes all along
TARGET = '''import json, os, time
def answer(question):
    with open("where.jsonl", "a") as out:
        out.write(json.dumps({"pid": os.getpid(), "ppid": os.getppid()}) + "\\n")
    time.sleep(float(os.environ.get("SLOW_S", "0")))
    return "An answer."
'''


def _run(cwd: Path, env: dict[str, str], dataset: str = "data.jsonl") -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "run", dataset, "-s", "tone-scorer", "--target", "idle_target:answer", "--no-cache"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _where(cwd: Path) -> list[dict[str, int]]:
    path = cwd / "where.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _record(cwd: Path) -> dict[str, Any]:
    return json.loads((cwd / ".evalduck" / "serve.json").read_text())


def _renderer(cwd: Path) -> int:
    return int(json.loads((cwd / ".evalduck" / "warm.json").read_text())["renderer_pid"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


@early.job("idle_folder")
def _idle_folder(context: early.Context) -> dict[str, Any]:
    """A fresh folder whose processes stop after IDLE_S s: two runs back to back, `status`, then a run of SLOW_S s."""
    root = context.root / "idle"
    root.mkdir()
    cwd, env = context.enter(project_folder(root, context.env))
    env = {**env, "EVALDUCK_IDLE_TIMEOUT": str(IDLE_S)}
    (cwd / "idle_target.py").write_text(TARGET)
    (cwd / "slow.jsonl").write_text((cwd / "data.jsonl").read_text().splitlines()[0] + "\n")
    first = _run(cwd, env)
    seen = len(_where(cwd))
    started = time.monotonic()
    second = _run(cwd, env)  # at once: no pause after the first
    second_s = time.monotonic() - started
    record = _record(cwd)
    second_where = _where(cwd)[seen:]
    status = subprocess.run([CLI, "status"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    pids = {"server": record["server_pid"], "starter": record["starter_pid"], "watcher": record["watcher_pid"],
            "renderer": _renderer(cwd)}
    slow = subprocess.Popen([CLI, "run", "slow.jsonl", "-s", "tone-scorer", "--target", "idle_target:answer",
                             "--no-cache"], cwd=cwd, env={**env, "SLOW_S": str(SLOW_S)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    slow_started = time.time()
    time.sleep(IDLE_S + 2.5)  # past the timeout, the run still going
    alive_mid = {name: _alive(pid) for name, pid in pids.items()}
    slow_going = slow.poll() is None
    out, err = slow.communicate(timeout=300)
    return {"cwd": cwd, "env": env, "first": first, "second": second, "second_s": second_s,
            "second_where": second_where, "record": record, "status": status, "pids": pids, "alive_mid": alive_mid,
            "slow_going": slow_going, "slow": subprocess.CompletedProcess(slow.args, slow.returncode, out, err),
            "slow_s": time.time() - slow_started, "slow_ended": time.time()}


@early.job("two_folders")
def _two_folders(context: early.Context) -> tuple[Path, dict[str, str], list[tuple[Path, dict[str, str]]]]:
    """Two folders' first runs at once, recorded in a registry of their own (XDG_RUNTIME_DIR)."""
    runtime = context.root / "run"
    runtime.mkdir(mode=0o700)
    made = []
    for name in ("b", "c"):
        (context.root / name).mkdir()
        cwd, env = context.enter(project_folder(context.root / name, {**context.env, "XDG_RUNTIME_DIR": str(runtime)}))
        (cwd / "idle_target.py").write_text(TARGET)
        made.append((cwd, env))
    runs = [subprocess.Popen([CLI, "run", "data.jsonl", "-s", "tone-scorer", "--target", "idle_target:answer"], cwd=cwd,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for cwd, env in made]
    for run, (cwd, _) in zip(runs, made, strict=True):
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, f"first run in {cwd}:\n{out}\n{err}"
    return context.root, {**context.env, "XDG_RUNTIME_DIR": str(runtime)}, made


@pytest.fixture(scope="module")
def idle_folder() -> dict[str, Any]:
    found: dict[str, Any] = early.result("idle_folder")
    assert found["first"].returncode == 0, found["first"].stdout + found["first"].stderr
    assert f"They stop by themselves after {IDLE_S} s with no run and no UI request" in found["first"].stderr
    return found


@pytest.fixture(scope="module")
def two_folders() -> tuple[Path, dict[str, str], list[tuple[Path, dict[str, str]]]]:
    found: tuple[Path, dict[str, str], list[tuple[Path, dict[str, str]]]] = early.result("two_folders")
    return found


def test_the_second_of_two_back_to_back_runs_is_forked_by_the_starter(idle_folder: dict[str, Any]) -> None:
    second = idle_folder["second"]
    assert second.returncode == 0, second.stdout + second.stderr
    starter = idle_folder["record"]["starter_pid"]
    assert idle_folder["second_where"] and {r["ppid"] for r in idle_folder["second_where"]} == {starter}, (
        f"the second run's target ran in {idle_folder['second_where']}, not in a child of the starter {starter}")
    print(f"second run, back to back: {idle_folder['second_s']:.1f} s")


def test_status_lists_the_folders_processes_with_memory_and_time_left(idle_folder: dict[str, Any]) -> None:
    status, pids = idle_folder["status"], idle_folder["pids"]
    assert status.returncode == 0, status.stdout + status.stderr
    for role, pid in pids.items():
        assert re.search(rf"{role}\s*│\s*{pid}\s*│\s*\d+ ", status.stdout), f"no {role} row with pid {pid} and its MB:\n{status.stdout}"
    assert idle_folder["record"]["ui_url"] in status.stdout
    assert re.search(rf"idle for \d+ s; stopped by the idle watcher in \d+ s .*EVALDUCK_IDLE_TIMEOUT={IDLE_S} s",
                     status.stdout), status.stdout


def test_nothing_stops_while_a_run_goes_and_everything_after_the_idle_timeout(idle_folder: dict[str, Any]) -> None:
    assert idle_folder["slow_going"], "the slow run ended before the idle timeout: it proves nothing"
    assert idle_folder["alive_mid"] == dict.fromkeys(idle_folder["pids"], True), (
        f"{IDLE_S + 2.5} s into a run, past the idle timeout: {idle_folder['alive_mid']}")
    slow = idle_folder["slow"]
    assert slow.returncode == 0 and idle_folder["slow_s"] >= SLOW_S, slow.stdout + slow.stderr
    cwd, env = idle_folder["cwd"], idle_folder["env"]
    state = cwd / ".evalduck"
    wait_for("the idle watcher to stop the folder", lambda: (state / "idle.log").exists()
             and "stopped the Prefect server" in (state / "idle.log").read_text(), timeout=IDLE_S + 30, every=0.2)
    assert none_left(env) == [], f"left running: {ours(env)}"
    log = (state / "idle.log").read_text()
    assert "stopping the folder's processes: idle" in log, log
    stopped_at = time.mktime(time.strptime(re.search(r"(\S+ \S+) idle watcher \d+: stopping", log)[1],  # type: ignore[index]
                                           "%Y-%m-%d %H:%M:%S"))
    assert stopped_at >= idle_folder["slow_ended"] + IDLE_S - 1.5, "stopped before the idle timeout after the run"
    for name in ("serve.json", "warm.json", "idle.json"):
        assert not (state / name).exists(), f"{name} left behind"
    assert not socket_path(state).exists() and not socket_path(state, "render").exists()
    after = subprocess.run([CLI, "status"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert "Nothing runs for this folder" in after.stdout, after.stdout


def test_stop_all_stops_every_folders_processes(two_folders: tuple[Path, dict[str, str], list[tuple[Path, dict[str, str]]]]) -> None:
    root, env, made = two_folders
    for cwd, folder_env in made:
        assert _record(cwd)["server_pid"] in ours(folder_env)
    done = subprocess.run([CLI, "stop", "--all"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for cwd, folder_env in made:
        assert f"{cwd}:" in done.stdout and none_left(folder_env) == [], done.stdout
        assert not (cwd / ".evalduck" / "serve.json").exists()
    assert list((Path(env["XDG_RUNTIME_DIR"]) / "evalduck" / "folders").glob("*.json")) == []
    again = subprocess.run([CLI, "stop", "--all"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "Nothing to stop" in again.stdout, again.stdout
