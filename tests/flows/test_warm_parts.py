"""The warm starter's decisions that need no process: which command a client hands over, when the starter's
imports are out of date, which caller variables it cannot apply (the processes: tests/e2e/test_warm_starter.py)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from warm_impostor import NOBODY, impostor

from evalduck.flows.launch import command_of
from evalduck.flows.local.warm.caller import frozen_env
from evalduck.flows.local.warm.preload import code_fingerprint
from evalduck.flows.local.warm.wire import MARKER, own_folder, socket_path


@pytest.mark.parametrize(("args", "command"), [
    (["run", "d.jsonl"], "run"), (["--db", "x.duckdb", "run", "d.jsonl"], "run"), (["--db=x", "runs"], "runs"),
    (["--help"], None), (["--db", "run"], None),
])
def test_the_command_is_found_after_the_global_options(args: list[str], command: str | None) -> None:
    assert command_of(args) == command


def test_a_changed_source_file_changes_the_fingerprint(tmp_path: Path) -> None:
    source = tmp_path / "flows" / "engine.py"
    source.parent.mkdir()
    source.write_text("x = 1\n")
    before = code_fingerprint(str(tmp_path))
    assert code_fingerprint(str(tmp_path)) == before
    source.write_text("x = 22\n")
    assert code_fingerprint(str(tmp_path)) != before
    (tmp_path / "scorers").mkdir()
    (tmp_path / "scorers" / "new.py").write_text("")
    stamp = code_fingerprint(str(tmp_path))
    os.utime(source, (1, 1))
    assert code_fingerprint(str(tmp_path)) != stamp


def test_only_interpreter_start_variables_must_match() -> None:
    assert frozen_env({"PYTHONPATH": "/a", "PREFECT_API_URL": "http://x", "HOME": "/h"}) == {
        "PYTHONPATH": "/a", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    assert frozen_env({}) == frozen_env({"LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    # litellm's log level is fixed at its import in the starter: a run with another one goes in its own process
    assert frozen_env({"LITELLM_LOG": "ERROR"}) != frozen_env({})


def test_a_long_state_folder_gets_a_short_socket_path(tmp_path: Path) -> None:
    assert socket_path(tmp_path) == tmp_path / "warm.sock"
    deep = tmp_path / ("d" * 120)
    assert len(os.fsencode(socket_path(deep))) < 108 and socket_path(deep) == socket_path(deep)


@pytest.mark.parametrize(("env", "args"), [({"CI": "true"}, []), ({"EVALDUCK_EPHEMERAL": "1"}, []), ({}, ["--ephemeral"])])
def test_ephemeral_runs_never_ask_the_starter(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], args: list[str]
) -> None:
    import evalduck.flows.cli
    import evalduck.flows.launch
    import evalduck.flows.local.warm.client

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALDUCK_STATE_DIR", raising=False)
    for key in ("CI", "EVALDUCK_EPHEMERAL"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    asked: list[list[str]] = []
    monkeypatch.setattr(evalduck.flows.local.warm.client, "run_via_starter", lambda kind, a: asked.append(a))
    monkeypatch.setattr(evalduck.flows.cli, "main", lambda: None)
    monkeypatch.setattr("sys.argv", ["evalduck", "run", "data.jsonl", *args])
    evalduck.flows.launch.main()
    assert asked == []
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("EVALDUCK_EPHEMERAL", raising=False)
    monkeypatch.setattr("sys.argv", ["evalduck", "run", "data.jsonl"])
    evalduck.flows.launch.main()  # the same command, not ephemeral: the starter is asked
    assert asked == [["run", "data.jsonl"]]


# --- another user at the sockets (/work/shared/notes/probe-2026-12-02.md D1) ------------------------------

CLI = str(Path(sys.executable).with_name("evalduck"))
QUIET = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "DO_NOT_TRACK": "1"}


def test_the_command_sends_nothing_to_another_users_listener(tmp_path: Path) -> None:
    """The folder's state file names a socket where another user listens: `evalduck run` connects, sees the
    listener's uid, sends nothing (no argv, environment or terminal) and runs in its own process."""
    state, sock = tmp_path / "state", tmp_path / "warm.sock"
    state.mkdir()
    (state / "serve.json").write_text(json.dumps({"starter_socket": str(sock)}))
    env = {**os.environ, **QUIET, "EVALDUCK_STATE_DIR": str(state), "OPENAI_API_KEY": "secret"}
    for key in ("CI", "EVALDUCK_EPHEMERAL"):  # the suite sets the one (tests/conftest.py), CI the other
        env.pop(key, None)                    # (a CI run never asks a starter); a user at a terminal has neither
    with impostor(sock, "starter") as seen:
        done = subprocess.run([CLI, "run", "missing.jsonl", "-s", "tone-scorer"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert seen() == [{"bytes": 0, "fds": 0}]
    assert f"is served by uid {NOBODY}, not by this user" in done.stderr and "running in this process" in done.stderr
    assert done.returncode != 0 and "missing.jsonl" in done.stderr  # the run itself went on here, and stopped


@pytest.mark.parametrize("made", ["another user's", "mode 777", "a symlink"])
def test_the_starter_refuses_a_socket_folder_that_is_not_only_its_users(tmp_path: Path, made: str) -> None:
    """A long project path puts the sockets in ``<temp dir>/evalduck-<uid>``: made by someone else first (or
    open to all, or a symlink to elsewhere), the starter does not start, so no socket of it can be swapped."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    folder = temp / f"evalduck-{os.getuid()}"
    if made == "a symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
    else:
        folder.mkdir()
        os.chmod(folder, 0o777 if made == "mode 777" else 0o700)
        if made == "another user's":
            os.chown(folder, NOBODY, NOBODY)
    state = tmp_path / ("long-project-folder-name-" * 4) / ".evalduck"
    state.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(QUIET, TMPDIR=str(temp))
    code = "import sys, pathlib; from evalduck.flows.local.warm.wire import socket_path; print(socket_path(pathlib.Path(sys.argv[1])))"
    path = subprocess.run([sys.executable, "-c", code, str(state)], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()
    assert Path(path).parent == folder
    # MARKER, as processes.start_starter runs it (and `evalduck stop` recognises it in the command line)
    started = subprocess.run([sys.executable, "-P", "-m", MARKER, str(state)], env=env, capture_output=True, text=True,
                             timeout=60)
    assert started.returncode == 1 and "not serving:" in started.stderr, started.stderr
    assert "nothing of evalduck's is made or used there" in started.stderr
    assert not any(folder.iterdir())


def test_the_sockets_folder_is_made_this_users_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    long = tmp_path / ("d" * 120)
    folder = socket_path(long).parent
    assert folder == tmp_path / f"evalduck-{os.getuid()}"
    old = os.umask(0o277)
    try:
        own_folder(folder)
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.lstat().st_mode) == 0o700 and folder.lstat().st_uid == os.getuid()
    own_folder(folder)  # ours already: accepted

    runtime = Path(tempfile.mkdtemp(prefix="xdg-", dir="/tmp"))  # short, as /run/user/<uid> is; mode 0700
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        assert socket_path(long).parent == runtime / "evalduck"  # preferred when it is ours
        os.chown(runtime, NOBODY, NOBODY)
        assert socket_path(long).parent == folder  # not ours: not used
    finally:
        runtime.rmdir()


def test_off_linux_the_command_never_asks_a_starter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without SO_PEERCRED (and pidfds) the listener's owner cannot be checked: no connection at all."""
    import select
    import socket

    import evalduck.flows.local.warm.client

    sock = tmp_path / "warm.sock"
    (tmp_path / "serve.json").write_text(json.dumps({"starter_socket": str(sock)}))
    monkeypatch.setenv("EVALDUCK_STATE_DIR", str(tmp_path))
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as listener:
        listener.bind(str(sock))
        listener.listen(1)
        monkeypatch.setattr(evalduck.flows.local.warm.client, "SUPPORTED", False)
        assert evalduck.flows.local.warm.client.run_via_starter("cli", ["run", "data.jsonl"]) is None
        assert select.select([listener], [], [], 0)[0] == []  # nobody connected


# --- the warm starter reviewed (issue 25 item 4) ------------------------------------------------------------

def _others_folder(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A project path too long for a socket, whose sockets' folder ``<temp dir>/evalduck-<uid>`` another user
    (nobody) made first; the state folder and the environment that points the temp dir there."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    folder = temp / f"evalduck-{os.getuid()}"
    folder.mkdir(mode=0o700)
    os.chown(folder, NOBODY, NOBODY)
    state = tmp_path / ("long-project-folder-name-" * 4) / ".evalduck"
    state.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "CI", "EVALDUCK_EPHEMERAL")}
    env.update(QUIET, TMPDIR=str(temp), EVALDUCK_STATE_DIR=str(state))
    return state, folder, env


ENSURE = """import json, os, sys, pathlib
from evalduck.flows.local.install.processes import ensure_starter
from evalduck.flows.local.install.state import ServeState
state = ensure_starter(pathlib.Path(sys.argv[1]), ServeState(api_url="", ui_url="", project_dir=os.getcwd()))
print(json.dumps({"pid": state.starter_pid, "socket": state.starter_socket}))
"""


def test_a_sockets_folder_another_user_made_gets_no_starter_and_no_request(tmp_path: Path) -> None:
    """The folder's run finds ``<temp dir>/evalduck-<uid>`` made by another user: no starter is started for
    it, and `evalduck run` (here even with a listener of this user's in that folder, which the other user
    could have swapped for theirs) sends nothing there and says why in one line, then runs here."""
    state, folder, env = _others_folder(tmp_path)
    ensured = subprocess.run([sys.executable, "-c", ENSURE, str(state)], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=60)
    recorded = json.loads(ensured.stdout)
    assert recorded["pid"] is None and Path(recorded["socket"]).parent == folder, ensured.stdout + ensured.stderr
    assert not (state / "warm.log").exists()  # no starter process was even started
    import select
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as listener:
        listener.bind(recorded["socket"])
        listener.listen(1)
        done = subprocess.run([CLI, "run", "missing.jsonl", "-s", "tone-scorer"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert select.select([listener], [], [], 0)[0] == [], "nobody connected"
    (line,) = [line for line in done.stderr.splitlines() if "running in this process" in line]
    assert line.startswith("evalduck: running in this process (refused: ") and str(folder) in line
    assert f"belongs to uid {NOBODY} with mode 700" in line and line.endswith("remove it)")
    assert done.returncode != 0 and "missing.jsonl" in done.stderr  # the run itself went on here, and stopped


def test_the_starter_gets_no_keys_of_the_run_that_started_it(tmp_path: Path) -> None:
    """A starter lives for many runs: the first run's provider keys and server credentials stay out of its
    environment (each run sends its own); what an interpreter and the preloads read at start stays in."""
    from evalduck.flows.local.install.processes import start_starter

    keys = {"OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "sk-2", "AWS_SECRET_ACCESS_KEY": "s3",
            "PREFECT_API_AUTH_STRING": "admin:pw", "PREFECT_API_KEY": "pnu", "GITHUB_TOKEN": "ghp", "MY_PASSWORD": "p"}
    kept = {"PREFECT_LOGGING_LEVEL": "WARNING", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "EVALDUCK_IDLE_TIMEOUT": "5"}
    waited = subprocess.Popen(["sleep", "60"])  # the starter waits for this "run" before its preloads
    try:
        starter = start_starter(tmp_path, {**keys, **kept}, after=waited.pid)
        try:
            wait = time.monotonic() + 30
            while (json.loads((tmp_path / "warm.json").read_text()).get("phase") if (tmp_path / "warm.json").exists()
                   else None) != "waiting":
                assert time.monotonic() < wait and starter.poll() is None, (tmp_path / "warm.log").read_text()
                time.sleep(0.05)
            raw = Path(f"/proc/{starter.pid}/environ").read_bytes().split(b"\0")
            env = dict(item.decode().split("=", 1) for item in raw if item)
        finally:
            os.killpg(starter.pid, signal.SIGKILL)
            starter.wait()
    finally:
        waited.kill()
        waited.wait()
    assert not set(keys) & set(env), sorted(set(keys) & set(env))
    assert {name: env.get(name) for name in kept} == kept
    assert env["PATH"] == os.environ["PATH"] and env["DO_NOT_TRACK"] == "1"


OFF_LINUX = """import json, os, select, socket, sys, pathlib
how, state = sys.argv[1], pathlib.Path(sys.argv[2])
# The server's modules first, with the real platform: the standard library's and pydantic's own macOS
# branches are not what is tested; then the warm modules imported again as on the other platform.
from evalduck.flows.local.install.processes import ensure_starter
from evalduck.flows.local.install.state import ServeState
if how == "platform":
    sys.platform = "darwin"
else:
    del os.pidfd_open  # a Linux without pidfds
for name in [name for name in sys.modules if name.startswith("evalduck.flows.local.warm")]:
    del sys.modules[name]
from evalduck.flows.local.warm import caller, child, children, client, loop, preload, renderer, starter, wire  # all
assert not wire.SUPPORTED
ensured = ensure_starter(state, ServeState(api_url="", ui_url="", project_dir=os.getcwd()))
assert (ensured.starter_pid, ensured.starter_socket) == (None, None), ensured
assert client.run_via_starter("cli", ["-v", "run", "data.jsonl"]) is None  # no record: said under -v
sock = state / "warm.sock"
(state / "serve.json").write_text(json.dumps({"starter_socket": str(sock)}))
with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as listener:
    listener.bind(str(sock))
    listener.listen(1)
    assert client.run_via_starter("cli", ["run", "data.jsonl"]) is None  # without -v: nothing said
    assert client.run_via_starter("engine", ["flow-run-id"]) is None
    assert select.select([listener], [], [], 0)[0] == [], "nobody connected"
"""


@pytest.mark.parametrize("how", ["platform", "capability"])
def test_off_linux_no_starter_is_started_and_runs_go_in_their_own_process(tmp_path: Path, how: str) -> None:
    """sys.platform "darwin" (or a Linux without pidfds): no starter is started for the folder, a run asks
    none, and `-v` says why; the process then runs the command itself, as without a starter."""
    state = tmp_path / ".evalduck"
    state.mkdir()
    env = {**os.environ, **QUIET, "EVALDUCK_STATE_DIR": str(state)}
    done = subprocess.run([sys.executable, "-c", OFF_LINUX, how, str(state)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (state / "warm.log").exists()
    why = ("the warm starter needs Linux (SO_PEERCRED, pidfds, prctl); this is darwin" if how == "platform"
           else "the warm starter needs os.pidfd_open, which this Python lacks")
    assert done.stderr == f"evalduck: running in this process ({why})\n"


def test_verbose_says_why_a_run_asked_no_starter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A folder whose record names no starter yet (its first run): `-v` says so; without -v nothing."""
    import evalduck.flows.local.warm.client

    monkeypatch.setenv("EVALDUCK_STATE_DIR", str(tmp_path))
    assert evalduck.flows.local.warm.client.run_via_starter("cli", ["run", "data.jsonl"]) is None
    assert capsys.readouterr().err == ""
    assert evalduck.flows.local.warm.client.run_via_starter("cli", ["-v", "run", "data.jsonl"]) is None
    assert capsys.readouterr().err == (f"evalduck: running in this process (no warm starter is recorded for "
                                       f"{tmp_path} yet)\n")


NO_PIDFDS = """import os, sys
del os.pidfd_open  # a Linux without pidfds: the starter exits at its start
from evalduck.flows.local.warm import starter
starter.main(sys.argv[1:])
"""


def test_verbose_says_why_the_recorded_starter_is_not_serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A starter that exits at its start leaves its reason in warm.json: the next run's `-v` prints it
    instead of only "no warm starter answered"."""
    import evalduck.flows.local.warm.client

    env = {**os.environ, **QUIET}
    exited = subprocess.run([sys.executable, "-c", NO_PIDFDS, str(tmp_path)], env=env, capture_output=True,
                            text=True, timeout=60)
    why = "the warm starter needs os.pidfd_open, which this Python lacks"
    assert exited.returncode == 1 and f"not serving: {why}" in exited.stderr, exited.stderr
    pid = json.loads((tmp_path / "warm.json").read_text())["pid"]
    record = {"starter_socket": str(tmp_path / "warm.sock"), "starter_pid": pid}
    (tmp_path / "serve.json").write_text(json.dumps(record))
    monkeypatch.setenv("EVALDUCK_STATE_DIR", str(tmp_path))
    assert evalduck.flows.local.warm.client.run_via_starter("cli", ["-v", "run", "data.jsonl"]) is None
    said = capsys.readouterr().err
    assert said == f"evalduck: running in this process (the warm starter (pid {pid}) is not serving: {why})\n"
