"""The report's chart client (flows/local/warm/renderer.py) against real renderer processes: the SVG is the one drawn
in-process, and whenever the renderer is absent or dies mid-request the chart is drawn in-process instead.
How the starter forks and ends its renderer: tests/e2e/test_warm_starter.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from warm_impostor import NOBODY, impostor

from evalduck.flows.local.warm import renderer

# Above one SOCK_SEQPACKET datagram (~200 KB): the spec travels in a memory file.
SPEC = {
    "data": {"values": [{"score": (i % 97) / 97} for i in range(8000)]},
    "mark": "bar",
    "encoding": {"x": {"field": "score", "bin": True, "type": "quantitative"}, "y": {"aggregate": "count"}},
}
DIES_MID_REQUEST = """import os, sys
from pathlib import Path
from evalduck.flows.local.warm.renderer import bind
from evalduck.flows.local.warm.wire import recv
listener = bind(Path(sys.argv[1]))
print("listening", flush=True)
conn, _ = listener.accept()
recv(conn)
os._exit(1)
"""


def wait_until(what: str, check, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def no_renderer_after() -> Iterator[None]:
    yield
    renderer.use_socket(None)


@pytest.fixture(scope="module")
def in_process() -> str:
    return renderer.draw_in_process(SPEC)


def test_the_renderer_draws_what_in_process_drawing_does(tmp_path: Path, in_process: str) -> None:
    sock, log = tmp_path / "render.sock", tmp_path / "renderer.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "evalduck.flows.local.warm.renderer", str(sock)], stderr=err)
    try:
        wait_until("the renderer to be ready", lambda: "ready" in log.read_text())
        renderer.use_socket(str(sock))
        assert renderer.draw_svg(SPEC) == in_process
        assert f"drew a chart for pid {os.getpid()}" in log.read_text()  # not drawn here
    finally:
        proc.kill()
        proc.wait()


def test_no_renderer_socket_draws_in_process(tmp_path: Path, in_process: str) -> None:
    renderer.use_socket(str(tmp_path / "absent.sock"))
    assert renderer.draw_svg(SPEC) == in_process


def test_a_renderer_dying_mid_request_draws_in_process(tmp_path: Path, in_process: str) -> None:
    sock = tmp_path / "render.sock"
    proc = subprocess.Popen([sys.executable, "-c", DIES_MID_REQUEST, str(sock)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
        renderer.use_socket(str(sock))
        assert renderer.draw_svg(SPEC) == in_process
        assert proc.wait(timeout=60) == 1  # it had the request, and died with it
    finally:
        proc.kill()
        proc.wait()


def test_another_users_renderer_is_sent_nothing_and_the_chart_is_drawn_here(
    tmp_path: Path, in_process: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """Another user's listener at the renderer's socket (it would answer an SVG with a script in it): the
    run sees its uid, sends no spec, takes no SVG and draws the chart itself."""
    sock = tmp_path / "render.sock"
    with impostor(sock, "svg") as seen:
        renderer.use_socket(str(sock))
        assert renderer.draw_svg(SPEC) == in_process
        assert seen() == [{"bytes": 0, "fds": 0}]
    assert f"is served by uid {NOBODY}, not by this user" in capfd.readouterr().err
