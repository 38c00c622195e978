"""The warm starter's loop: one thread, one selector over the listening socket and the running children
(flows/local/warm/children.py); a child per accepted request, and the folder's chart renderer.

A child is forked only from that single thread with nothing else running, so it inherits no lock held by
another thread. Each selector key's data is the bound method that handles its event.

A run is refused (the client then runs the command itself) from another interpreter or source tree, with
different interpreter-start variables (PYTHONPATH...), or when evalduck's code or the installed packages
changed since the starter started (it then exits too, and the next run starts a new one); and when its child
cannot take on the caller's umask, nice value, limits or CPUs (a hard limit above the starter's...), which the
child applies before it answers.
"""

from __future__ import annotations

import os
import select
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from evalduck.flows.local.warm.caller import PACKAGES_ROOT, apply_process, frozen_env
from evalduck.flows.local.warm.children import Children, quietly
from evalduck.flows.local.warm.preload import code_fingerprint
from evalduck.flows.local.warm.wire import close_fds, peer, recv, send, socket_path, write_starter_status

__all__ = ("Starter", "log")

_KINDS = ("cli", "engine")
_READY_TIMEOUT_S = 5.0  # for a new child to say it took on its caller's process settings
_Ready = tuple[int, int]  # the pipe a new child says on whether it took on its caller's process settings


def log(line: str) -> None:
    """One line of the starter's log (its stderr, ``warm.log`` in the state folder)."""
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} warm starter {os.getpid()}: {line}", file=sys.stderr, flush=True)


@dataclass
class _Request:
    conn: socket.socket
    message: dict[str, Any]
    fds: list[int]  # the caller's streams (a judge child's socket first, for a judge request)

    @property
    def judge(self) -> bool:
        return self.message.get("kind") == "judge"


class Starter:
    """The listening socket, the children and the renderer of one state folder's starter."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.path = socket_path(state_dir)
        self.fingerprint = code_fingerprint()
        self.frozen = frozen_env(dict(os.environ))
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.children = Children(self.selector, self._child_exited)
        self.render_path = socket_path(state_dir, "render")
        self.render_listener: socket.socket | None = None  # bound while there is a renderer to accept on it
        self.renderer: int | None = None  # the renderer child's pid (alive while it is in ``children``)
        self.preload_s: float | None = None  # set once it listens

    def write_status(self) -> None:
        """Once it listens, and again when its renderer changes: the status file says "listening"."""
        if self.preload_s is not None:
            write_starter_status(self.state_dir, phase="listening", since=time.time(), preload_s=self.preload_s,
                                 renderer_pid=self.renderer if self.renderer in self.children else None)

    # --- set-up and the loop ---------------------------------------------------------------------------

    def listen(self) -> None:
        self.path.unlink(missing_ok=True)
        old = os.umask(0o077)  # the socket is for this user only (SO_PEERCRED is checked too)
        try:
            self.listener.bind(str(self.path))
        finally:
            os.umask(old)
        self.listener.listen(16)
        self.selector.register(self.listener, selectors.EVENT_READ, self._accept)

    def serve_forever(self) -> None:
        while True:
            for key, _ in self.selector.select():
                key.data()

    def close(self) -> None:
        if self.preload_s is not None:  # kept for the folder's next starter (its expected import time)
            write_starter_status(self.state_dir, phase="stopped", preload_s=self.preload_s)
        quietly(self.path.unlink, True)
        self.listener.close()
        if self.renderer in self.children:
            quietly(os.kill, self.renderer, signal.SIGKILL)
        self._drop_renderer_listener()

    def _drop_renderer_listener(self) -> None:
        """Closed with its renderer, so that a run asking then is refused at once (and draws itself) instead
        of waiting in the backlog of a socket that nobody accepts on."""
        if self.render_listener is not None:
            self.render_listener.close()
            self.render_listener = None
            quietly(self.render_path.unlink, True)

    # --- children --------------------------------------------------------------------------------------

    def _forget_in_child(self, keep: socket.socket | None) -> None:
        """In a new child: close every descriptor of the starter's (listener, selector, other clients, the
        request's socket ``keep``), but the renderer's listener in the renderer (``keep`` None)."""
        self.selector.close()
        self.listener.close()
        self.children.forget()
        if keep is not None:
            keep.close()
            if self.render_listener is not None:
                self.render_listener.close()

    # --- the chart renderer ----------------------------------------------------------------------------

    def ensure_renderer(self) -> None:
        """A live renderer child; a failure to start one is logged, never a refused run (runs then draw
        their charts themselves)."""
        if self.renderer in self.children:
            return
        try:
            if self.render_listener is None:
                from evalduck.flows.local.warm.renderer import bind

                self.render_listener = bind(self.render_path)
            pid = self.children.fork(self._become_renderer)
        except OSError as exc:
            log(f"no chart renderer: {exc}")
            return
        self.children.watch(pid, None)
        self.renderer = pid
        log(f"forked the chart renderer {pid}")
        self.write_status()

    def _become_renderer(self) -> None:
        from evalduck.flows.local.warm import child, renderer

        child.die_with_starter()
        for sig in (signal.SIGTERM, signal.SIGINT):  # not the starter's handlers: it ends as killed
            signal.signal(sig, signal.SIG_DFL)
        self._forget_in_child(None)
        renderer.serve(self.render_listener)

    def _child_exited(self, pid: int, status: int) -> None:
        if pid == self.renderer:
            log(f"the chart renderer {pid} ended ({os.waitstatus_to_exitcode(status)}); a new one starts with "
                "the next run")
            self._drop_renderer_listener()
            self.write_status()

    # --- requests --------------------------------------------------------------------------------------

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        if peer(conn)[1] != os.getuid():
            conn.close()
            return
        conn.settimeout(2.0)
        try:
            message, fds = recv(conn)
        except OSError:
            conn.close()
            return
        try:
            self._handle(_Request(conn, message or {}, fds))
        except OSError as exc:  # before any fork (a fork that fails raises here too)
            log(f"request failed: {exc}")
            close_fds(fds)
            conn.close()

    def _handle(self, request: _Request) -> None:
        if request.judge:
            pid, refused = self._fork_request(request)
            self._answer(request, {"refused": refused} if refused else {"started": pid})
            return
        if request.message.get("kind") not in _KINDS or len(request.fds) != 3:
            self._answer(request, {"refused": "not a request this starter knows"})
            return
        reason, outdated = self._refusal(request.message)
        if reason:
            log(f"refused a run: {reason}")
            if outdated:  # gone before the client's fallback run looks for a starter to replace
                self.close()
            self._answer(request, {"refused": reason})
            if outdated:
                raise SystemExit(0)
            return
        self.ensure_renderer()
        pid, refused = self._fork_request(request)
        if refused:
            log(f"refused a run: {refused}")
            self._answer(request, {"refused": refused})
            return
        quietly(send, request.conn, {"started": pid})  # a client gone already: the loop sees its socket close

    def _answer(self, request: _Request, reply: dict[str, Any]) -> None:
        """The last word to a request's client: the request's fds and socket are closed."""
        close_fds(request.fds)
        quietly(send, request.conn, reply)
        request.conn.close()

    def _refusal(self, message: dict[str, Any]) -> tuple[str | None, bool]:
        if message.get("executable") != sys.executable or message.get("root") != PACKAGES_ROOT:
            return "another Python or evalduck checkout than the starter's", False
        env = message.get("env")
        if not isinstance(env, dict) or frozen_env(env) != self.frozen:
            return "interpreter-start variables (PYTHONPATH...) differ from the starter's", False
        if code_fingerprint() != self.fingerprint:
            return "evalduck's code or the installed packages changed since the starter started", True
        return None, False

    def _fork_request(self, request: _Request) -> tuple[int, str | None]:
        """A child for the request, and None; or, when the child could not take on the caller's process
        settings (it has then exited, having run nothing), the reason."""
        become = self._become_judge if request.judge else self._become_run
        ready_r, ready_w = os.pipe()
        try:
            pid = self.children.fork(partial(become, request, (ready_r, ready_w)))
        except OSError:
            os.close(ready_r)
            raise
        finally:
            os.close(ready_w)
        refused = self._took_on_caller(pid, ready_r)
        close_fds(request.fds)
        if refused:
            return pid, refused
        if not request.judge:
            quietly(os.setpgid, pid, pid)  # its own process group; the child does it too, whichever is first
        elif isinstance(request.message.get("pgid"), int):
            quietly(os.setpgid, pid, request.message["pgid"])  # killed with its run's process group
        self.children.watch(pid, None if request.judge else request.conn)
        log(f"forked {'a judge child' if request.judge else 'a run child'} {pid} ({request.message.get('kind')})")
        return pid, None

    def _took_on_caller(self, pid: int, ready_r: int) -> str | None:
        """None once the new child said it took on its caller's process settings; else, the child killed
        and reaped, why not."""
        try:
            said = os.read(ready_r, 4096) if select.select([ready_r], [], [], _READY_TIMEOUT_S)[0] else b""
        finally:
            os.close(ready_r)
        if said == b"ok":
            return None
        quietly(os.kill, pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return said.decode(errors="replace") or "the new child did not start"

    # --- in a child forked for a request (none of these returns) --------------------------------------

    def _take_on_caller(self, request: _Request, ready: _Ready) -> None:
        """The caller's umask, nice value, limits and CPUs, said on ``ready``; exit when they cannot be."""
        os.close(ready[0])
        try:
            apply_process(request.message["process"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            why = f"the caller's umask, nice value, limits or CPUs cannot be applied: {exc}"
            os.write(ready[1], why.encode())
            os._exit(0)
        os.write(ready[1], b"ok")
        os.close(ready[1])

    def _become_judge(self, request: _Request, ready: _Ready) -> None:
        self._forget_in_child(request.conn)
        self._take_on_caller(request, ready)
        from evalduck.flows.local.warm import child

        child.become_judge(request.message, request.fds)

    def _become_run(self, request: _Request, ready: _Ready) -> None:
        render_socket = str(self.render_path) if self.renderer in self.children else None
        client = request.conn.dup()  # the run tells its client its run id (child.announce_run)
        self._forget_in_child(request.conn)
        self._take_on_caller(request, ready)
        from evalduck.flows.local.warm import child, renderer

        renderer.use_socket(render_socket)
        child.become_run(request.message, request.fds, str(self.path), client)
