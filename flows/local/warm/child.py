"""A child forked by the warm starter: become the client's process, run its command, exit as it would.

The child takes the client's environment, working directory, argv, ``sys.path[0]``, stdin/stdout/stderr
(so rich sees the real terminal), umask, nice value, resource limits, CPU affinity and ignored signals
(`nohup` keeps a warm run through a SIGHUP as it keeps a run in its own process), rebuilds Prefect's
settings and logging from that environment (Prefect read them at the starter's import:
flows/prefect_settings.py), and then runs the
same code the client would have run in-process:
the evalduck CLI, or `python -m prefect.engine` for a flow run of the folder's worker. It dies with the
starter (PR_SET_PDEATHSIG); the starter kills it when the client goes.

Judge children (flows/judge/process.py) of such a run are forked by the starter too, with litellm already
imported: ``install_judge_launcher`` points judge_process at ``start_judge_child``.
"""

from __future__ import annotations

import atexit
import ctypes
import io
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import threading
import warnings
from typing import Any, NoReturn

from evalduck.flows.local.warm.caller import caller_process
from evalduck.flows.local.warm.wire import NotOurs, connect_own, recv, send

__all__ = ("announce_run", "become_judge", "die_with_starter", "become_run", "start_judge_child")

_PR_SET_PDEATHSIG = 1
# The starter's socket, in a child forked for a run (None elsewhere: the Python API and in-process runs).
_starter_socket: str | None = None
# The run's client (its socket with the starter, shared): told the run id, to name it if the starter dies.
_client: socket.socket | None = None


def die_with_starter() -> None:
    """Ask the kernel to kill this child when the starter dies, so no run outlives the process that owns it."""
    parent = os.getppid()
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the starter died before the line above
        os._exit(1)


def _take_over(message: dict[str, Any], fds: list[int]) -> None:
    """The client's standard streams, working directory, environment and ignored signals (its umask, nice
    value and limits the starter's fork applied already: caller.apply_process)."""
    for target, fd in zip((0, 1, 2), fds, strict=True):
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)
    os.chdir(message["cwd"])
    os.environ.clear()
    os.environ.update(message["env"])
    # New text streams on the new descriptors: the starter's were made for a log file (block-buffered).
    stdout_tty = os.isatty(1)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=sys.stdin.encoding,
                                 errors=sys.stdin.errors)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=sys.stdout.encoding,
                                  errors=sys.stdout.errors, line_buffering=stdout_tty, write_through=False)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=sys.stderr.encoding,
                                  errors="backslashreplace", line_buffering=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    _take_signals(set(message["process"]["ignored"]))


def _take_signals(ignored: set[int]) -> None:
    """The signals as a new Python process started by the client has them: the client's ignored ones
    ignored, SIGINT raising KeyboardInterrupt, the starter's handlers and its other ignored ones at their
    default (handlers the preloaded modules installed are kept)."""
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        current = signal.getsignal(sig)
        if int(sig) in ignored:
            signal.signal(sig, signal.SIG_IGN)
        elif sig == signal.SIGINT:
            signal.signal(sig, signal.default_int_handler)
        elif sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT) or current is signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)


def become_run(
    message: dict[str, Any], fds: list[int], starter_socket: str, client: socket.socket | None = None
) -> NoReturn:
    """Turn this forked child into the client's run (its streams, environment, argv) and exit with its code."""
    global _starter_socket, _client
    die_with_starter()
    try:
        os.setpgid(0, 0)  # its own process group: the starter signals the run and its children together
    except OSError:
        pass
    _take_over(message, fds)
    sys.argv = list(message["argv"])
    if sys.path and message.get("path0") is not None:
        sys.path[0] = message["path0"]
    _starter_socket, _client = starter_socket, client if message["kind"] == "cli" else None
    install_judge_launcher()
    from evalduck.flows.run.started import set_process_hook

    set_process_hook(announce_run)
    if message["kind"] == "engine":
        from evalduck.flows.prefect_settings import refresh_prefect

        refresh_prefect()  # `evalduck run` does it itself, once it has set its console's log level
    _exit(_run(message["kind"]))


def announce_run(run_id: str) -> None:
    """Tell the client which run this is (and the command that resumes it), so that a client whose starter
    dies before the run ends can name them."""
    if _client is None:
        return
    from evalduck.flows.cli.run_stops import resume_command

    try:
        send(_client, {"run": run_id, "resume": resume_command(run_id)})
    except OSError:
        pass


def _run(kind: str) -> int:
    try:
        if kind == "engine":
            with warnings.catch_warnings():  # runpy's note that prefect (not prefect.engine) is imported
                warnings.simplefilter("ignore", RuntimeWarning)
                runpy.run_module("prefect.engine", run_name="__main__", alter_sys=True)
        else:
            from evalduck.flows.cli import main

            main()
        return 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("KeyboardInterrupt", file=sys.stderr)
        return 130
    except BaseException:  # noqa: BLE001 - reported as Python would, then exit 1
        import traceback

        traceback.print_exc()
        return 1


def _exit(code: int) -> NoReturn:
    """End as Python's own exit would (non-daemon threads joined, atexit handlers run), without the
    teardown of every module (~0.5 s here, nothing of it observable)."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


# --- judge children ---------------------------------------------------------------------------------------


def become_judge(message: dict[str, Any], fds: list[int]) -> NoReturn:
    """A judge child for a run (flows/judge/child.py's ``child_main`` on the socket it was sent)."""
    die_with_starter()
    conn_fd, *streams = fds
    devnull = os.open(os.devnull, os.O_RDONLY)
    _take_over(message, [devnull, *streams])
    from evalduck.flows.judge.child import child_main

    child_main(conn_fd)
    _exit(0)


class StarterChild:
    """A judge child the starter forked for this run: the parts of ``subprocess.Popen`` judge_process uses.

    It is not this process's child, so its exit status is not known here (``poll`` gives 1 once it ended)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._pidfd = os.pidfd_open(pid)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._pidfd], [], [], 0)[0]:
            self.returncode = 1
            os.close(self._pidfd)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not select.select([self._pidfd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(f"judge child {self.pid}", timeout or 0)
        return self.poll() or 0

    def kill(self) -> None:
        if self.returncode is None:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except OSError:
                pass


def start_judge_child(child: socket.socket, env: dict[str, str]) -> Any:
    """Ask the starter for a judge child serving ``child``; judge_process's own way if it cannot."""
    from evalduck.flows.judge import process as judge_process

    assert _starter_socket is not None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
            sock.settimeout(10)
            connect_own(sock, _starter_socket)  # the child's socket goes to this user's starter only
            send(sock, {"kind": "judge", "env": env, "cwd": os.getcwd(), "pgid": os.getpgrp(),
                        "process": caller_process()}, [child.fileno(), 1, 2])
            reply, _ = recv(sock)
        if reply is not None and isinstance(reply.get("started"), int):
            if os.stat(f"/proc/{reply['started']}").st_uid == os.getuid():
                return StarterChild(reply["started"])
    except OSError as exc:
        if isinstance(exc, NotOurs):
            print(f"evalduck: judge requests in a child of this run instead: {exc}", file=sys.stderr)
    return judge_process.popen_child(child, env)


def install_judge_launcher() -> None:
    from evalduck.flows.judge import process as judge_process

    judge_process.start_child = start_judge_child
