"""Another user's listener at one of the warm starter's socket paths, as the probe's attacker ran it
(/work/shared/notes/probe-2026-12-02.md D1): a real process that binds the socket, drops to uid 65534
(nobody) before listen() (the kernel records the listener's credentials there, which is what a client's
SO_PEERCRED sees), and reports on stdout what each connection sent it: bytes and file descriptors. It answers
what the attacker answered: a starter's "refused" (mode ``starter``), a judge child "started" (``judge``), or
an SVG with a script in it (``svg``). The test process runs as root (CI does), so it can connect to it.

``python warm_impostor.py MODE SOCKET``; from a test: ``with impostor(path, mode) as seen: ... seen()``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

NOBODY = 65534
EVIL_SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>document.title = "pwned"</script></svg>'


def serve(mode: str, path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    os.chmod(path, 0o777)
    os.chown(path, NOBODY, NOBODY)
    os.setgid(NOBODY)
    os.setuid(NOBODY)  # before listen(): the credentials a client's SO_PEERCRED reads are nobody's
    listener.listen(16)
    print("listening", flush=True)
    while True:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(5)
            try:
                data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 8)
            except OSError:
                data, fds = b"", []
            print(json.dumps({"bytes": len(data), "fds": len(fds)}), flush=True)
            if not data:
                continue
            if mode == "starter":
                conn.sendall(json.dumps({"refused": "busy"}).encode())
            elif mode == "judge":
                conn.sendall(json.dumps({"started": os.getpid()}).encode())
            elif mode == "svg":
                out = os.memfd_create("svg")
                os.write(out, EVIL_SVG)
                os.lseek(out, 0, os.SEEK_SET)
                socket.send_fds(conn, [json.dumps({"svg": True}).encode()], [out])
            for fd in fds:
                os.close(fd)


@contextmanager
def impostor(path: Path, mode: str) -> Iterator[Callable[[], list[dict[str, int]]]]:
    """The impostor listening at ``path``; yields what it has seen so far (one entry per connection)."""
    proc = subprocess.Popen([sys.executable, __file__, mode, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
    lines: list[dict[str, int]] = []

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(json.loads(line))

    threading.Thread(target=read, daemon=True).start()

    def seen() -> list[dict[str, int]]:
        deadline = time.monotonic() + 5  # a connection closed just now: its line is on its way
        while not lines and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(lines)

    try:
        yield seen
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
