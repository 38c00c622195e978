"""The warm starter's decisions that need no process: which command a client hands over, when the starter's
imports are out of date, which caller variables it cannot apply (the processes: tests/e2e/test_warm_starter.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flows.launch import command_of
from flows.warm.starter import code_fingerprint
from flows.warm.wire import frozen_env, socket_path


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


def test_a_long_state_folder_gets_a_short_socket_path(tmp_path: Path) -> None:
    assert socket_path(tmp_path) == tmp_path / "warm.sock"
    deep = tmp_path / ("d" * 120)
    assert len(os.fsencode(socket_path(deep))) < 108 and socket_path(deep) == socket_path(deep)


def test_the_starter_waits_for_a_quiet_gap_between_runs_in_their_own_process(tmp_path: Path) -> None:
    """Scripted runs back to back never leave the gap, so they never share the cores with the preloads."""
    from flows.folder import running_here, wait_until_quiet

    with running_here(tmp_path):
        assert wait_until_quiet(tmp_path, quiet_s=0.2, poll_s=0.05, limit_s=0.6) is False
    assert wait_until_quiet(tmp_path, quiet_s=0.2, poll_s=0.05, limit_s=5.0) is True


@pytest.mark.parametrize(("env", "args"), [({"CI": "true"}, []), ({"EVALDUCK_EPHEMERAL": "1"}, []), ({}, ["--ephemeral"])])
def test_ephemeral_runs_never_ask_the_starter(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], args: list[str]
) -> None:
    import flows.cli
    import flows.launch
    import flows.warm.client

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALDUCK_STATE_DIR", raising=False)
    for key in ("CI", "EVALDUCK_EPHEMERAL"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    asked: list[list[str]] = []
    monkeypatch.setattr(flows.warm.client, "run_via_starter", lambda kind, a: asked.append(a))
    monkeypatch.setattr(flows.cli, "main", lambda: None)
    monkeypatch.setattr("sys.argv", ["evalduck", "run", "data.jsonl", *args])
    flows.launch.main()
    assert asked == []
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("EVALDUCK_EPHEMERAL", raising=False)
    monkeypatch.setattr("sys.argv", ["evalduck", "run", "data.jsonl"])
    flows.launch.main()  # the same command, not ephemeral: the starter is asked
    assert asked == [["run", "data.jsonl"]]
