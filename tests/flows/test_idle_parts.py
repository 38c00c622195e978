"""The parts of the folder's idle stop, `status` and `stop --all` that need no server: the idle timeout's
setting, the run lock runs hold, what the watcher counts as a request, the services a run's server turns off,
when a run waits for a starter that is still importing, and the registry of folders."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from evalduck.flows.local.folder import last_run_at, no_run_starts, run_going, running_here
from evalduck.flows.local.idle import connections, poll_interval
from evalduck.flows.settings import DEFAULT_IDLE_TIMEOUT_S, idle_timeout


@pytest.mark.parametrize(("raw", "seconds"), [(None, DEFAULT_IDLE_TIMEOUT_S), ("", DEFAULT_IDLE_TIMEOUT_S), ("5", 5.0),
                                              ("0", 0.0), (" 90.5 ", 90.5)])
def test_the_idle_timeout_is_seconds_from_its_variable(raw: str | None, seconds: float) -> None:
    assert idle_timeout({} if raw is None else {"EVALDUCK_IDLE_TIMEOUT": raw}) == seconds


@pytest.mark.parametrize("raw", ["soon", "-1", "nan", "inf"])
def test_a_bad_idle_timeout_names_the_variable_and_the_value(raw: str) -> None:
    with pytest.raises(ValueError, match=rf"EVALDUCK_IDLE_TIMEOUT='{raw}' is not a number of seconds >= 0"):
        idle_timeout({"EVALDUCK_IDLE_TIMEOUT": raw})


def test_the_watcher_looks_often_enough_for_short_timeouts_and_rarely_for_long_ones() -> None:
    assert poll_interval(5) == 0.5 and poll_interval(1800) == 10.0 and poll_interval(20) == 2.0


def test_a_run_holds_the_folder_run_lock_and_stamps_it(tmp_path: Path) -> None:
    assert not run_going(tmp_path) and last_run_at(tmp_path) == 0.0
    before = time.time() - 1
    with running_here(tmp_path):
        assert run_going(tmp_path)
        with no_run_starts(tmp_path) as quiet:
            assert quiet is False  # the watcher does not stop anything under a run
    assert not run_going(tmp_path) and last_run_at(tmp_path) >= before


def test_a_run_starting_while_the_watcher_stops_the_folder_waits_for_it(tmp_path: Path) -> None:
    with no_run_starts(tmp_path) as quiet:
        assert quiet
        started = time.monotonic()
        with running_here(tmp_path, wait_s=0.4):  # a watcher that never lets go: the run goes on after wait_s
            waited = time.monotonic() - started
    assert 0.4 <= waited < 3


def test_the_watcher_counts_open_and_closing_connections_to_the_servers_port() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert connections(port) == set()  # listening alone is not a request
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        assert {state for state, _, _ in connections(port)} == {"01"}  # established, both ends
        accepted.close()  # the server closes first (uvicorn's idle keep-alive): TIME_WAIT on its side
        client.close()
        time.sleep(0.1)
        assert "06" in {state for state, _, _ in connections(port)}


def test_a_runs_server_turns_off_only_real_prefect_services(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.settings import Settings

    from evalduck.flows.local.install.state import RUNS_ONLY_SERVICES_OFF

    for name, value in RUNS_ONLY_SERVICES_OFF.items():
        monkeypatch.setenv(name, value)
    services = Settings().server.services
    for name in RUNS_ONLY_SERVICES_OFF:
        field = name.removeprefix("PREFECT_SERVER_SERVICES_").removesuffix("_ENABLED").lower()
        assert getattr(services, field).enabled is False, name
    assert services.task_run_recorder.enabled and services.event_persister.enabled  # the UI's task runs and events


def test_a_run_waits_for_a_starter_that_is_importing_when_that_is_sooner(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalduck.flows.local.warm import client

    me, now = os.getpid(), time.time()
    ready_by = client._ready_by
    assert ready_by(None, me) is None
    assert ready_by({"pid": me, "phase": "listening", "expected_s": 8.0}, me) is None
    importing = {"pid": me, "phase": "importing", "since": now - 6, "expected_s": 8.0}
    assert now + 2 < (ready_by(importing, me) or 0) < now + 2 + client._GRACE_S + 2.5  # ~2 s left, plus grace
    assert ready_by(importing, me + 1) is None  # not the recorded starter
    assert ready_by({**importing, "since": now + 5}, me) is None  # "left" not below its own import time
    gone = 2**22 + 12345  # no such pid: the run it waited for has ended, its imports start now
    waiting = {"pid": me, "phase": "waiting", "after": gone, "expected_s": 8.0}
    assert ready_by(waiting, me) is not None
    assert ready_by({**waiting, "after": me}, me) is None  # still waiting for a run that goes on


def test_the_registry_keeps_a_copy_of_each_folders_record(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from evalduck.flows.local.install.folders import register, registered, registry_dir, unregister

    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert registry_dir() == runtime / "evalduck" / "folders" and registered() == []
    register(tmp_path / "a" / ".evalduck", '{"server_pid": 1}')
    register(tmp_path / "b" / ".evalduck", '{"server_pid": 2}')
    register(tmp_path / "a" / ".evalduck", '{"server_pid": 3}')  # rewritten with its record
    assert sorted((str(d), r["server_pid"]) for d, r in registered()) == [
        (str(tmp_path / "a" / ".evalduck"), 3), (str(tmp_path / "b" / ".evalduck"), 2)]
    assert oct((runtime / "evalduck" / "folders").stat().st_mode & 0o777) == "0o700"
    unregister(tmp_path / "a" / ".evalduck")
    assert [d for d, _ in registered()] == [tmp_path / "b" / ".evalduck"]


def test_a_runs_server_polls_its_background_worker_every_two_seconds() -> None:
    """The installed Docket still takes the two intervals calm_server sets (an upgrade that renamed them
    would otherwise leave a run's server polling every 250 ms unnoticed)."""
    import prefect.server.api.background_workers as workers
    from docket import Docket

    from evalduck.flows.local.install.calm_server import CALM_INTERVAL, calm_docket_worker

    original = workers.Worker
    try:
        assert calm_docket_worker()
        worker = workers.Worker(Docket(name="evalduck-test", url="memory://"))
    finally:
        workers.Worker = original
    assert isinstance(worker, original)
    assert worker.minimum_check_interval == CALM_INTERVAL == worker.scheduling_resolution
