"""The folder's warm chart renderer, and the one function the report draws its charts with.

vl-convert's first call in a process starts its JavaScript runtime (~2-3.5 s here, holding the GIL, so no
thread can overlap it); later calls take ~0.05-0.3 s. The runtime cannot be started in the warm starter
before it forks (a forked child's call then hangs), so every forked run would pay that start again. Instead
the starter forks one renderer child, before anything started a runtime, which starts it once and then draws
for the runs the starter forks: they send a Vega-Lite spec over a unix socket and get the SVG back.

Everywhere else (the Python API, ephemeral and CI runs, `evalduck report`) and whenever the renderer is
missing, refuses, dies or is too slow, or when another user's process listens on its socket (nothing is
sent to it: SO_PEERCRED is checked first), ``draw_svg`` draws in-process: a chart is never lost to the
renderer, and an SVG is never taken from a process that is not this user's.

The spec and the SVG travel in memory files sent with wire.py's messages: one SOCK_SEQPACKET datagram is
capped by the socket buffer (~200 KB here), which a large run's histogram data passes.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from evalduck.flows.local.warm.wire import NotOurs, close_fds, connect_own, peer, recv, send
from evalduck.flows.report.html.charts import draw_in_process, use_drawer

__all__ = ("TIMEOUT_S", "draw_in_process", "draw_svg", "main", "serve", "use_socket")

# Per chart, for the renderer's reply: covers its runtime start (~2-3.5 s) when a run asks before it is
# warm, and a queue of a few runs' charts; past that the run draws the chart itself.
TIMEOUT_S = 20.0
# The renderer's socket, in a run forked by the warm starter (None elsewhere: charts are drawn in-process).
_socket: str | None = None
# Drawn once by the renderer before it serves, so that its runtime has started before any run asks.
_WARM_UP = {"mark": "point", "data": {"values": [{"x": 1}]}, "encoding": {"x": {"field": "x", "type": "quantitative"}}}


def use_socket(path: str | None) -> None:
    """Set in a run the starter forked (flows/local/warm/child.py): where its renderer listens; the report's charts
    are drawn by ``draw_svg`` from then on (None: in-process again)."""
    global _socket
    _socket = path
    use_drawer(draw_svg if path is not None else None)


def draw_svg(spec: dict[str, Any], timeout_s: float = TIMEOUT_S) -> str:
    """The SVG of a Vega-Lite spec: from the folder's renderer when this run has one, else drawn here."""
    global _socket
    if _socket is not None:
        try:
            return _ask(_socket, spec, timeout_s)
        except Exception as exc:  # noqa: BLE001 - whatever went wrong there, the chart is drawn here instead
            _socket = None  # and so are this run's next ones: at most one wait for a renderer that hangs
            if isinstance(exc, NotOurs):
                print(f"evalduck: the report's charts are drawn in this process: {exc}", file=sys.stderr)
    return draw_in_process(spec)


def _memfile(data: bytes) -> int:
    fd = os.memfd_create("evalduck-chart", os.MFD_CLOEXEC)
    os.write(fd, data)  # a memory file takes the whole write at once
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _read_fd(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _ask(path: str, spec: dict[str, Any], timeout_s: float) -> str:
    fds = [_memfile(json.dumps(spec).encode())]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
            sock.settimeout(timeout_s)
            connect_own(sock, path)
            send(sock, {"draw": "svg"}, fds)
            reply, got = recv(sock)
    finally:
        close_fds(fds)
    if reply is None or reply.get("svg") is not True or len(got) != 1:
        close_fds(got)
        raise RuntimeError(f"the renderer did not draw the chart: {reply}")
    return _read_fd(got.pop()).decode("utf-8")


# --- the renderer process ---------------------------------------------------------------------------------


def serve(listener: socket.socket) -> NoReturn:
    """Start vl-convert's runtime, then draw for whoever connects, one request at a time, until killed."""
    started = time.monotonic()
    draw_in_process(_WARM_UP)
    _log(f"ready (its JavaScript runtime started in {time.monotonic() - started:.1f} s)")
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        with conn:
            _answer(conn)


def _answer(conn: socket.socket) -> None:
    peer_pid, uid = peer(conn)
    if uid != os.getuid():
        return
    conn.settimeout(TIMEOUT_S)
    fds: list[int] = []
    try:
        message, fds = recv(conn)
        if message is None or message.get("draw") != "svg" or len(fds) != 1:
            send(conn, {"refused": "not a request this renderer knows"})
            return
        started = time.monotonic()
        svg = draw_in_process(json.loads(_read_fd(fds.pop())))
        _log(f"drew a chart for pid {peer_pid} in {time.monotonic() - started:.2f} s")  # logged before it is sent
        out = [_memfile(svg.encode("utf-8"))]
        try:
            send(conn, {"svg": True}, out)
        finally:
            close_fds(out)
    except Exception as exc:  # noqa: BLE001 - one bad request must not end the renderer
        _log(f"could not draw a chart for pid {peer_pid}: {exc}")
        try:
            send(conn, {"refused": str(exc)[:1000]})
        except OSError:
            pass
    finally:
        close_fds(fds)


def bind(path: Path) -> socket.socket:
    """The renderer's listening socket, for this user only (SO_PEERCRED is checked too)."""
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    old = os.umask(0o077)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    listener.listen(16)
    return listener


def _log(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} warm renderer {os.getpid()}: {line}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> NoReturn:
    """``python -m evalduck.flows.local.warm.renderer SOCKET``: a renderer on its own (the starter forks its own instead)."""
    args = sys.argv[1:] if argv is None else argv
    serve(bind(Path(args[0])))


if __name__ == "__main__":
    main()
