"""`evalduck run` through the folder's warm starter, as a user runs it: real CLI processes in one folder with its
own PREFECT_HOME, shared by the tests of this module in order (its server takes ~20 s to start; the last test
stops it). The target of these runs records its process's pid and parent pid, which proves where it ran: a
child of the starter (its parent is the recorded starter pid) or the CLI process itself."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import early
import pytest
from e2e_harness import CLI, ROWS, api_auth, none_left, ours, project_folder, wait_for

from evalduck.flows.local.warm.wire import socket_path

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
    # said while it starts, not only once it answers (~25 s of silence before)
    assert first.stderr.index("starting a local Prefect server for this folder (first time: ~30 s)...") < \
        first.stderr.index("Started a local Prefect server")
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
    assert "starting a local Prefect server" not in second.stderr
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
    # CI only: --ephemeral and EVALDUCK_EPHEMERAL=1 take the same branch of evalduck.flows.launch (evalduck.flows.local.folder.ephemeral).
    # The run records to the folder's server through PREFECT_API_URL, which evalduck.flows.launch does not read, so it
    # starts no temporary server of its own (test_local_server.py proves a CI run's temporary server).
    pid, proc = run(cwd, {**env, "CI": "true", "PREFECT_API_URL": str(record(cwd)["api_url"]),
                          "PREFECT_API_AUTH_STRING": api_auth(cwd / ".evalduck")})  # a named server: its credentials
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert where(cwd)[-1]["pid"] == pid


PROCESS_TARGET = """import json, os, resource
def answer(question):
    umask = int(next(line for line in open("/proc/self/status") if line.startswith("Umask:")).split()[1], 8)
    with open("process.jsonl", "a") as out:
        out.write(json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "umask": umask,
                              "nice": os.getpriority(os.PRIO_PROCESS, 0),
                              "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE))}) + "\\n")
    return "An answer."
"""


def test_a_warm_run_has_the_callers_umask_nice_value_and_limits(warm_folder: tuple[Path, dict[str, str]]) -> None:
    """`umask 077; ulimit -n 512; nice -n 7 evalduck run ...`: the run forked by the starter (the target's
    parent is the starter) writes its results file and report 0600 and runs at nice 7 with 512 files, as the
    same command in its own process does."""
    cwd, env = warm_folder
    starter = warm(cwd)
    (cwd / "process_target.py").write_text(PROCESS_TARGET)
    shell = (f"umask 077; ulimit -n 512; exec nice -n 7 {CLI} --db private.duckdb run data.jsonl -s tone-scorer "
             "--target process_target:answer --no-cache --name private")
    done = subprocess.run(["sh", "-c", shell], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = [json.loads(line) for line in (cwd / "process.jsonl").read_text().splitlines()]
    assert {r["ppid"] for r in seen} == {starter}, "the run was forked by the starter"
    assert {(r["umask"], r["nice"], tuple(r["nofile"])) for r in seen} == {(0o077, 7, (512, 512))}
    report = Path(re.findall(r"report: (\S+)", done.stdout)[-1])
    assert {(cwd / "private.duckdb").stat().st_mode & 0o777, (cwd / report).stat().st_mode & 0o777} == {0o600}


def test_a_warm_runs_judge_children_are_forked_by_the_starter(warm_folder: tuple[Path, dict[str, str]]) -> None:
    """A judge-scored run (the fake OpenAI server) under nice 5: its judge child is asked of the starter
    (after the listener check), takes the run's settings before it answers, and the scores arrive."""
    from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

    cwd, env = warm_folder
    warm(cwd)
    with FakeOpenAIServer() as judge:
        done = subprocess.run(["nice", "-n", "5", CLI, "run", "data.jsonl", "-s", "answer-relevancy-scorer",
                               "--judge-model", "openai/fake-judge", "--judge-api-base", judge.base_url, "--no-cache"],
                              cwd=cwd, env={**env, "OPENAI_API_KEY": "sk-fake"}, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert judge.request_count >= len(ROWS)
    assert re.search(r"forked a judge child \d+ \(judge\)", _log(cwd)), _log(cwd)


def test_the_starter_refuses_a_caller_its_child_cannot_become(warm_folder: tuple[Path, dict[str, str]]) -> None:
    """A caller's settings the forked child cannot take on (here CPUs this machine does not have; as a user,
    a hard limit above the starter's, or a lower nice value): the starter answers "refused" (the run then
    goes in the caller's process) before anything ran, and serves the next run."""
    cwd, env = warm_folder
    starter = warm(cwd)
    ask = """import json, os, socket, sys
from evalduck.flows.local.warm import caller, wire
process = {**caller.caller_process(), "affinity": [4095]}
with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
    wire.connect_own(sock, sys.argv[1])
    wire.send(sock, {"kind": "cli", "argv": ["evalduck", "runs"], "cwd": os.getcwd(), "env": dict(os.environ),
                     "path0": "", "process": process, **caller.identity()}, [0, 1, 2])
    print(json.dumps(wire.recv(sock)[0]))
"""
    asked = subprocess.run([sys.executable, "-c", ask, str(record(cwd)["starter_socket"])], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=60)
    reply = json.loads(asked.stdout)
    assert "cannot be applied" in reply["refused"], asked.stdout + asked.stderr
    assert "refused a run: the caller's umask, nice value, limits or CPUs cannot be applied" in _log(cwd)
    # Through the command: refused (here for PYTHONPATH), the run goes in the CLI's process; -v says why.
    pid, here = run(cwd, {**env, "PYTHONPATH": str(cwd / "elsewhere")}, "-v")
    assert here.returncode == 0 and where(cwd)[-1]["pid"] == pid, here.stdout + here.stderr
    assert ("evalduck: running in this process (the warm starter refused: interpreter-start variables "
            "(PYTHONPATH...) differ from the starter's)\n") in here.stderr
    _, after = run(cwd, env)
    assert after.returncode == 0 and where(cwd)[-1]["ppid"] == starter


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _slow_run(cwd: Path, env: dict[str, str], version: str, *wrapper: str) -> tuple[subprocess.Popen[str], int]:
    """A run of three items, one at a time, each ~1 s in the target; and its run child's pid, once started."""
    write_target(cwd, version, sleep=1)
    proc = subprocess.Popen([*wrapper, CLI, "run", "data.jsonl", "-s", "tone-scorer", "--target", "where_target:answer",
                             "--no-cache", "--concurrency", "1"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    child = wait_for("the run's target to start", lambda: next(
        (int(r["pid"]) for r in where(cwd) if r["version"] == version), None), timeout=120, every=0.1)  # type: ignore[arg-type]
    return proc, child


def test_nohup_keeps_a_warm_run_through_a_sighup(warm_folder: tuple[Path, dict[str, str]]) -> None:
    """`nohup evalduck run ...`, then the terminal goes (SIGHUP): the run, ignoring SIGHUP as its caller
    does, completes all its cells, as it does in its own process."""
    cwd, env = warm_folder
    starter = warm(cwd)
    proc, child = _slow_run(cwd, env, "nohup", "nohup")
    assert where(cwd)[-1]["ppid"] == starter
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert len([r for r in where(cwd) if r["version"] == "nohup"]) == len(ROWS) and "results in" in out


def test_ctrl_z_stops_a_warm_run_and_sigcont_resumes_it(warm_folder: tuple[Path, dict[str, str]]) -> None:
    cwd, env = warm_folder
    starter = warm(cwd)
    proc, child = _slow_run(cwd, env, "stopped")
    assert where(cwd)[-1]["ppid"] == starter
    proc.send_signal(signal.SIGTSTP)
    wait_for("the run child to stop", lambda: _state(child) == "T" or None, timeout=20, every=0.1)
    wait_for("the client to stop", lambda: _state(proc.pid) == "T" or None, timeout=20, every=0.1)
    proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert len([r for r in where(cwd) if r["version"] == "stopped"]) == len(ROWS) and "results in" in out


def test_a_killed_starter_names_the_run_and_how_to_finish_it(warm_folder: tuple[Path, dict[str, str]]) -> None:
    """The starter killed mid-run takes the run with it; the command says which run it was and the command
    that finishes it, which does (in its own process, starting a new starter for the runs after it)."""
    cwd, env = warm_folder
    starter = warm(cwd)
    proc, _child = _slow_run(cwd, env, "orphaned")
    (cwd / ".evalduck" / "warm.log").unlink()  # the next starter's "listening on" is the one to wait for
    os.kill(starter, signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    (line,) = [line for line in err.splitlines() if "the warm starter ended before run" in line]
    resume = shlex.split(line.split("Finish it with: ", 1)[1])
    assert resume[:2] == ["evalduck", "run"] and resume[-2] == "--resume"
    write_target(cwd, "one")
    done = subprocess.run([CLI, *resume[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"run {resume[-1]}" in done.stdout  # the summary of the run that was interrupted
    assert warm(cwd) != starter


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
