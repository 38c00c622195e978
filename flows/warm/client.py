"""The thin side of the warm starter: hand this process's command to a child of the folder's starter and
stand in for it until it ends.

The child gets this process's argv, working directory, environment and its stdin/stdout/stderr themselves
(SCM_RIGHTS), so it prints to the same terminal or pipe; this process forwards SIGINT, SIGTERM, SIGHUP and
SIGQUIT to the child's process group and exits as the child did. When this process dies, even by SIGKILL,
the starter sees its socket close and kills the child. Whenever no starter answers or it refuses (its code
is older than the files, a different interpreter or PYTHONPATH...), ``run_via_starter`` returns None and
the caller runs the command itself, as it would without a starter.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from typing import NoReturn

from flows.folder import project_state_dir
from flows.warm.wire import identity, recorded_socket, recv, send

__all__ = ("exit_like", "run_via_starter")

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# A starter that accepted but does not answer (stopped, swamped) is given up on after this; its child, if it
# forks one later, is killed when it finds this socket closed.
_REPLY_TIMEOUT_S = 3.0


def run_via_starter(kind: str, args: list[str]) -> int | None:
    """Run ``args`` (``kind`` "cli": the evalduck CLI; "engine": `python -m prefect.engine`) in a child of
    this folder's warm starter and return its exit code (negative: the signal that ended it); None when
    there is no starter to use, before anything ran."""
    path = recorded_socket(project_state_dir())
    if path is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.settimeout(_REPLY_TIMEOUT_S)
        sock.connect(path)
        request = {"kind": kind, "argv": [sys.argv[0], *args], "cwd": os.getcwd(), "env": dict(os.environ),
                   "path0": sys.path[0] if sys.path else "", **identity()}
        send(sock, request, [0, 1, 2])
        reply, _ = recv(sock)
    except OSError:
        sock.close()
        return None
    if reply is None or not isinstance(reply.get("started"), int):
        sock.close()
        return None
    sock.settimeout(None)
    return _stand_in(sock)


def _stand_in(sock: socket.socket) -> int:
    """Forward signals to the child until the starter reports how it ended."""

    def forward(signum: int, _frame: object) -> None:
        try:
            send(sock, {"signal": signum})
        except OSError:
            pass

    for sig in _FORWARDED:
        signal.signal(sig, forward)
    while True:
        message, _ = recv(sock)
        if message is None:
            sys.stderr.write("evalduck: the warm starter ended before the run did (see `evalduck stop`)\n")
            return 1
        if isinstance(message.get("exit"), int):
            return int(message["exit"])


def exit_like(code: int) -> NoReturn:
    """Exit as the child did: with its code, or killed by the same signal (as a shell would see it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    sys.exit(code)
