"""Run writers and their liveness: a killed run is marked `interrupted` when the file is next opened, a run
whose process still works never is, and what cannot be known (another host, a run from before schema v3)
is left alone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from evalduck.flows.store import Store
from evalduck.flows.store.liveness import this_writer, writer_alive

LINUX = Path("/proc/self/stat").exists()


def _exited_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(proc.stdout)


def test_this_process_is_alive_and_an_exited_one_is_not() -> None:
    me = this_writer()
    assert me.pid == os.getpid() and me.host == socket.gethostname()
    assert writer_alive(me.pid, me.host, me.token) is True
    assert writer_alive(_exited_pid(), me.host, me.token) is False
    assert writer_alive(_exited_pid(), me.host, None) is False  # no start token: the pid alone


def test_what_cannot_be_known_is_none() -> None:
    me = this_writer()
    assert writer_alive(_exited_pid(), "some-other-host", me.token) is None
    assert writer_alive(0, me.host, None) is None


@pytest.mark.skipif(not LINUX, reason="start tokens come from /proc")
def test_start_token_catches_a_reused_pid_a_reboot_and_another_namespace() -> None:
    me = this_writer()
    assert me.token is not None
    boot, pidns, start = me.token.split("/")
    assert writer_alive(me.pid, me.host, f"{boot}/{pidns}/{int(start) + 1}") is False  # another process, same pid
    assert writer_alive(me.pid, me.host, f"00000000-boot/{pidns}/{start}") is False  # the machine restarted
    assert writer_alive(me.pid, me.host, f"{boot}/pid:[1]/{start}") is None  # another container's pid


START_AND_EXIT = """
import sys
from evalduck.flows.store import Store
store = Store(sys.argv[1])
store.start_run("gone", "nightly", "d.jsonl", "h", {})
store.write_scores("gone", [{"item_id": "i1", "scorer_id": "s", "scorer_version": "1", "score": 0.5}])
"""


def test_a_run_whose_process_ended_without_finishing_is_interrupted_on_next_open(db_path: Path) -> None:
    subprocess.run([sys.executable, "-c", START_AND_EXIT, str(db_path)], check=True, timeout=120)
    mine = Store(db_path)
    assert mine.interrupted == ["gone"]
    mine.start_run("alive", "adhoc", "d.jsonl", "h", {})  # this process: alive
    again = Store(db_path)
    assert again.interrupted == [] and again.mark_interrupted() == []
    statuses = dict(again.sql("SELECT run_id, status FROM runs").rows)
    assert statuses == {"gone": "interrupted", "alive": "running"}
    (finished, last) = again.sql(
        "SELECT finished_at, (SELECT max(created_at) FROM scores WHERE run_id = 'gone') FROM runs WHERE run_id = 'gone'"
    ).rows[0]
    assert finished == last  # ends at its last stored cell
    assert again.resolve_run("latest") == "alive" and again.run_record("nightly").status == "interrupted"
    # A resume takes it over: running again, with this process as its writer.
    again.start_run("gone", "nightly", "d.jsonl", "h", {})
    assert Store(db_path).run_record("gone").status == "running"
