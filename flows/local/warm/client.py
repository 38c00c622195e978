"""The thin side of the warm starter: hand this process's command to a child of the folder's starter and
stand in for it until it ends.

Nothing is sent before the kernel confirms that the process listening on the socket is this user's
(SO_PEERCRED), nor to a socket in a folder that is not this user's alone: another user's listener, or
folder, at the recorded path gets nothing, and the run goes here (said in one line). The child
gets this process's argv, working directory, environment, umask, nice value, resource limits, CPU affinity,
ignored signals and its stdin/stdout/stderr themselves (SCM_RIGHTS), so it prints to the same terminal or
pipe; this process forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGWINCH to the child's process group,
unless it ignores them itself (`nohup`: the child ignores SIGHUP too), stops the run when it is stopped
(Ctrl-Z) and continues it with SIGCONT, and exits as the child did. When this process dies, even by
SIGKILL, the starter sees its socket close and kills the child. Whenever no starter answers or it refuses
(its code is older than the files, a different interpreter or PYTHONPATH...), ``run_via_starter``
returns None and the caller runs the command itself, as it would without a starter (`-v` says why).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import NoReturn

from evalduck.flows.local.folder import project_state_dir
from evalduck.flows.local.warm.caller import caller_process, identity
from evalduck.flows.local.warm.wire import (
    SUPPORTED,
    UNSUPPORTED_WHY,
    NotOurs,
    connect_own,
    folder_refusal,
    recorded_pid,
    recorded_socket,
    recv,
    send,
    starter_status,
)

__all__ = ("exit_like", "run_via_starter")

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGWINCH)
# A starter that accepted but does not answer (stopped, swamped) is given up on after this; its child, if it
# forks one later, is killed when it finds this socket closed.
_REPLY_TIMEOUT_S = 3.0
# Beyond the starter's expected import time, how long a run waits for it before importing itself.
_GRACE_S = 2.0


def run_via_starter(kind: str, args: list[str]) -> int | None:
    """Run ``args`` (``kind`` "cli": the evalduck CLI; "engine": `python -m prefect.engine`) in a child of
    this folder's warm starter and return its exit code (negative: the signal that ended it); None when
    there is no starter to use, before anything ran."""
    state_dir = project_state_dir()
    path = recorded_socket(state_dir)
    verbose = kind == "cli" and any(arg in ("-v", "--verbose") for arg in args)
    if not SUPPORTED or path is None:
        if verbose:
            _in_process(UNSUPPORTED_WHY if not SUPPORTED else f"no warm starter is recorded for {state_dir} yet")
        return None
    folder = Path(path).parent
    refused = None if folder == state_dir else folder_refusal(folder)
    if refused is not None:  # another user could have swapped the socket there: always said
        _in_process(f"refused: {refused}")
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.settimeout(_REPLY_TIMEOUT_S)
        _connect_when_ready(sock, path, verbose)
        request = {"kind": kind, "argv": [sys.argv[0], *args], "cwd": os.getcwd(), "env": dict(os.environ),
                   "path0": sys.path[0] if sys.path else "", "process": caller_process(), **identity()}
        send(sock, request, [0, 1, 2])
        reply, _ = recv(sock)
    except OSError as exc:
        sock.close()
        if verbose or isinstance(exc, NotOurs):  # another user's socket: always said
            _in_process(f"refused: {exc}" if isinstance(exc, NotOurs) else _not_answered(state_dir, path, exc))
        return None
    if reply is None or not isinstance(reply.get("started"), int):
        sock.close()
        if verbose:
            _in_process(f"the warm starter refused: {(reply or {}).get('refused', 'no answer')}")
        return None
    sock.settimeout(None)
    return _stand_in(sock)


def _not_answered(state_dir: Path, path: str, exc: OSError) -> str:
    """Why no starter answered: the reason the recorded one gave when it exited at its start, if it did."""
    status = starter_status(state_dir) or {}
    if status.get("phase") == "not serving" and status.get("pid") == recorded_pid(state_dir):
        return f"the warm starter (pid {status['pid']}) is not serving: {status.get('reason')}"
    return f"no warm starter answered at {path}: {exc.strerror or exc}"


def _connect_when_ready(sock: socket.socket, path: str, verbose: bool) -> None:
    """Connect to the starter; while it is still importing its preloads (or about to, its first run having
    ended), wait for it instead when it will be done sooner than this process's own imports would take
    (the same modules: its expected import time), so that runs back to back are forked from it."""
    state_dir = project_state_dir()
    deadline = _ready_by(starter_status(state_dir), recorded_pid(state_dir))
    if deadline is not None and verbose:
        sys.stderr.write(f"evalduck: waiting up to {max(0.0, deadline - time.time()):.0f} s for the warm starter's "
                         "imports (sooner than this process's own)\n")
    while True:
        try:
            connect_own(sock, path)
            return
        except (FileNotFoundError, ConnectionRefusedError):
            if deadline is None or time.time() > deadline or not _alive(recorded_pid(state_dir)):
                raise
            time.sleep(0.05)


def _ready_by(status: dict[str, object] | None, starter: int | None) -> float | None:
    """When the recorded starter should listen, if it is importing (or about to) and that is sooner than
    importing here; None: do not wait."""
    if status is None or status.get("pid") != starter or not _alive(starter):
        return None
    expected = status.get("expected_s")
    if not isinstance(expected, (int, float)) or expected <= 0:
        return None
    now = time.time()
    if status.get("phase") == "importing" and isinstance(status.get("since"), (int, float)):
        since = float(status["since"])  # type: ignore[arg-type]
    elif status.get("phase") == "waiting" and not _alive(status.get("after")):
        since = now  # the run it waited for has ended: it starts its imports now
    else:
        return None
    left = since + expected - now
    if left > expected:  # not sooner than importing here (a clock step); equal: it would share the CPU with it
        return None
    return now + max(left, 0.0) + _GRACE_S + 0.25 * expected  # a little slower than last time: still sooner


def _alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _in_process(why: str) -> None:
    sys.stderr.write(f"evalduck: running in this process ({' '.join(why.split())})\n")
    sys.stderr.flush()


def _stand_in(sock: socket.socket) -> int:
    """Forward signals to the child until the starter reports how it ended."""

    def forward(signum: int, _frame: object) -> None:
        try:
            send(sock, {"signal": signum})
        except OSError:
            pass

    def stopped(signum: int, frame: object) -> None:
        """Ctrl-Z: the run stops (the starter sends its process group SIGSTOP), then so does this process,
        as the shell expects; SIGCONT (`fg`, `bg`) continues both."""
        forward(signum, frame)
        os.kill(os.getpid(), signal.SIGSTOP)  # SIGTSTP could be dropped for an orphaned process group

    for sig in _FORWARDED:
        if signal.getsignal(sig) is not signal.SIG_IGN:  # what the caller ignores, the child ignores too
            signal.signal(sig, forward)
    if signal.getsignal(signal.SIGTSTP) is not signal.SIG_IGN:
        signal.signal(signal.SIGTSTP, stopped)
        signal.signal(signal.SIGCONT, forward)
    run: dict[str, object] = {}
    while True:
        message, _ = recv(sock)
        if message is None:
            sys.stderr.write(_starter_gone(run))
            return 1
        if isinstance(message.get("exit"), int):
            return int(message["exit"])
        if isinstance(message.get("run"), str):  # the child announced its run (flows/local/warm/child.py)
            run = message


def _starter_gone(run: dict[str, object]) -> str:
    """What to do when the starter (and with it the run) ended first: its stored cells are kept."""
    if isinstance(run.get("resume"), str):
        return (f"evalduck: the warm starter ended before run {run['run']} did; its stored cells are kept. "
                f"Finish it with: {run['resume']}\n")
    return ("evalduck: the warm starter ended before the run did; whatever it stored is kept: `evalduck runs` "
            "lists it, and `evalduck run DATASET ... --resume RUN` finishes it\n")


def exit_like(code: int) -> NoReturn:
    """Exit as the child did: with its code, or killed by the same signal (as a shell would see it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    sys.exit(code)
