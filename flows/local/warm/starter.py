"""The warm starter process: import what every run imports, then fork one child per request.

Started in the background next to the folder's Prefect server (flows/local/server.py, flows/local/install/processes.py) as
``python -P -m evalduck.flows.local.warm.starter STATE_DIR [--after PID]``; recorded in the folder's state file; ended by `evalduck stop`
(SIGTERM). It runs one thread and one selector loop: the listening socket, one socket per running client
and one pidfd per child. A child is forked only from that single thread with nothing else running, so it
inherits no lock held by another thread. The user's code (a target module, custom scorers, the dataset) is
never imported here: each child imports it itself, fresh.

It also forks and keeps the folder's chart renderer (flows/local/warm/renderer.py), once its preloads are done and
again before a run when the last one died: the runs it forks send their charts there.

It refuses a request (the client then runs the command itself) from another interpreter or source tree,
with different interpreter-start variables (PYTHONPATH...), or when evalduck's code or the installed
packages changed since it started; in that last case it also exits, and the next run starts a new one. It
also refuses a caller whose umask, nice value, resource limits or CPU affinity its child cannot take on
(a hard limit above the starter's...): each child takes them before it answers. It listens only in a folder
of this user's that nobody else may enter (flows/local/warm/wire.py ``own_folder``), else it does not start.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import select
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from evalduck.flows.local.warm.wire import (
    DEFAULT_PRELOAD_S,
    MARKER,
    PACKAGES_ROOT,
    SUPPORTED,
    UNSUPPORTED_WHY,
    apply_process,
    close_fds,
    frozen_env,
    own_folder,
    peer,
    recv,
    send,
    socket_path,
    starter_status,
    write_starter_status,
)

__all__ = ("MARKER", "PRELOADS", "code_fingerprint", "main")

# Imported once here instead of in every run: Prefect and its engines (~2-4 s), evalduck's flows, CLI and
# store, and litellm (~5 s, for the judge children this process forks). Modules whose import starts a
# thread must not be listed: `main` refuses to serve if one did.
PRELOADS = (
    "prefect",
    "prefect.flow_engine",
    "prefect.task_engine",
    "prefect.logging.handlers",
    "prefect.events.worker",
    "prefect.client.orchestration",
    "prefect.results",
    "prefect.artifacts",
    "fastapi.encoders",  # imported by Prefect at a flow run's start, to serialise its parameters (~0.4 s)
    "evalduck.flows.cli",
    "evalduck.flows.cli.run",
    "evalduck.flows.eval_flow",
    "evalduck.flows.regression_flow",
    "evalduck.flows.local.server",
    "evalduck.flows.store",
    "evalduck.flows.judge.process",
    "litellm",
    "evalduck.scorers.judge",
)
_KINDS = ("cli", "engine")
# What a client may pass on to its run's process group, as what: Ctrl-Z (SIGTSTP) stops the run with SIGSTOP,
# which nothing in the run can catch and the kernel never drops.
_FORWARDABLE = {int(s): s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCONT,
                                     signal.SIGWINCH)} | {int(signal.SIGTSTP): signal.SIGSTOP}
_READY_TIMEOUT_S = 5.0  # for a new child to say it took on its caller's process settings


def code_fingerprint(root: str = PACKAGES_ROOT) -> str:
    """Size and mtime of every source file of evalduck and of every site-packages folder on the path (an
    install or removal changes the folder): a starter whose imports are older than these is out of date."""
    digest = hashlib.sha256()
    for package in ("flows", "scorers"):
        for path in sorted((Path(root) / package).rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path}\0{stat.st_mtime_ns}\0{stat.st_size}\0".encode())
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")) and os.path.isdir(entry):
            digest.update(f"{entry}\0{os.stat(entry).st_mtime_ns}\0".encode())
    return digest.hexdigest()


@dataclass
class _Child:
    pid: int
    pidfd: int
    client: socket.socket | None  # None for a judge child: nobody waits for its status


class Starter:
    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.path = socket_path(state_dir)
        self.fingerprint = code_fingerprint()
        self.frozen = frozen_env(dict(os.environ))
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.children: dict[int, _Child] = {}
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
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))

    def serve_forever(self) -> None:
        while True:
            for key, _ in self.selector.select():
                what, child = key.data
                if what == "accept":
                    self._accept()
                elif what == "client":
                    self._client_event(child)
                else:
                    self._reap(child)

    def close(self) -> None:
        if self.preload_s is not None:  # kept for the folder's next starter (its expected import time)
            write_starter_status(self.state_dir, phase="stopped", preload_s=self.preload_s)
        _try(self.path.unlink, True)
        self.listener.close()
        if self.renderer in self.children:
            _try(os.kill, self.renderer, signal.SIGKILL)
        self._drop_renderer_listener()

    def _drop_renderer_listener(self) -> None:
        """Closed with its renderer, so that a run asking then is refused at once (and draws itself) instead
        of waiting in the backlog of a socket that nobody accepts on."""
        if self.render_listener is not None:
            self.render_listener.close()
            self.render_listener = None
            _try(self.render_path.unlink, True)

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
            pid = os.fork()
        except OSError as exc:
            _log(f"no chart renderer: {exc}")
            return
        if pid == 0:
            try:
                from evalduck.flows.local.warm import child, renderer

                child.die_with_starter()
                for sig in (signal.SIGTERM, signal.SIGINT):  # not the starter's handlers: it ends as killed
                    signal.signal(sig, signal.SIG_DFL)
                self._forget_in_child(None)
                renderer.serve(self.render_listener)
            except BaseException:  # noqa: BLE001 - a child must never fall back into the loop
                traceback.print_exc()
            os._exit(70)
        pidfd = os.pidfd_open(pid)
        record = _Child(pid, pidfd, None)
        self.children[pid] = record
        self.renderer = pid
        self.selector.register(pidfd, selectors.EVENT_READ, ("exited", record))
        _log(f"forked the chart renderer {pid}")
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
            self._handle(conn, message or {}, fds)
        except OSError as exc:  # before any fork (a fork that fails raises here too)
            _log(f"request failed: {exc}")
            close_fds(fds)
            conn.close()

    def _handle(self, conn: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
        kind = message.get("kind")
        if kind == "judge":
            pid, refused = self._fork(conn, message, fds, judge=True)
            _try(send, conn, {"refused": refused} if refused else {"started": pid})
            conn.close()
            return
        if kind not in _KINDS or len(fds) != 3:
            close_fds(fds)
            send(conn, {"refused": "not a request this starter knows"})
            conn.close()
            return
        reason, outdated = self._refusal(message)
        if reason:
            close_fds(fds)
            _log(f"refused a run: {reason}")
            if outdated:  # gone before the client's fallback run looks for a starter to replace
                self.close()
            send(conn, {"refused": reason})
            conn.close()
            if outdated:
                raise SystemExit(0)
            return
        self.ensure_renderer()
        pid, refused = self._fork(conn, message, fds, judge=False)
        if refused:
            _log(f"refused a run: {refused}")
            _try(send, conn, {"refused": refused})
            conn.close()
            return
        _try(send, conn, {"started": pid})  # a client gone already: the loop sees its socket close

    def _refusal(self, message: dict[str, Any]) -> tuple[str | None, bool]:
        if message.get("executable") != sys.executable or message.get("root") != PACKAGES_ROOT:
            return "another Python or evalduck checkout than the starter's", False
        env = message.get("env")
        if not isinstance(env, dict) or frozen_env(env) != self.frozen:
            return "interpreter-start variables (PYTHONPATH...) differ from the starter's", False
        if code_fingerprint() != self.fingerprint:
            return "evalduck's code or the installed packages changed since the starter started", True
        return None, False

    def _fork(
        self, conn: socket.socket, message: dict[str, Any], fds: list[int], judge: bool
    ) -> tuple[int, str | None]:
        """A child for the request, and None; or, when the child could not take on the caller's process
        settings (it has then exited, having run nothing), the reason."""
        render_socket = str(self.render_path) if self.renderer in self.children else None
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            try:
                os.close(ready_r)
                client = None if judge else conn.dup()  # the run tells its client its run id (child.announce_run)
                self._forget_in_child(conn)
                try:
                    apply_process(message["process"])
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    why = f"the caller's umask, nice value, limits or CPUs cannot be applied: {exc}"
                    os.write(ready_w, why.encode())
                    os._exit(0)
                os.write(ready_w, b"ok")
                os.close(ready_w)
                from evalduck.flows.local.warm import child

                if judge:
                    child.become_judge(message, fds)
                from evalduck.flows.local.warm import renderer

                renderer.use_socket(render_socket)
                child.become_run(message, fds, str(self.path), client)
            except BaseException:  # noqa: BLE001 - a child must never fall back into the loop
                traceback.print_exc()
            os._exit(70)
        os.close(ready_w)
        try:
            ready = os.read(ready_r, 4096) if select.select([ready_r], [], [], _READY_TIMEOUT_S)[0] else b""
        finally:
            os.close(ready_r)
        if ready != b"ok":
            _try(os.kill, pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            close_fds(fds)
            return pid, ready.decode(errors="replace") or "the new child did not start"
        if judge and isinstance(message.get("pgid"), int):
            _try(os.setpgid, pid, message["pgid"])  # killed with its run's process group
        elif not judge:
            _try(os.setpgid, pid, pid)  # the child does it too; whichever is first
        close_fds(fds)
        pidfd = os.pidfd_open(pid)
        record = _Child(pid, pidfd, None if judge else conn)
        self.children[pid] = record
        self.selector.register(pidfd, selectors.EVENT_READ, ("exited", record))
        _log(f"forked {'a judge child' if judge else 'a run child'} {pid} ({message.get('kind')})")
        if not judge:
            self.selector.register(conn, selectors.EVENT_READ, ("client", record))
        return pid, None

    def _forget_in_child(self, keep: socket.socket | None) -> None:
        """In a new child: close every descriptor of the starter's (listener, selector, other clients, the
        request's socket ``keep``), but the renderer's listener in the renderer (``keep`` None)."""
        self.selector.close()
        self.listener.close()
        for other in self.children.values():
            _try(os.close, other.pidfd)
            if other.client is not None:
                other.client.close()
        if keep is not None:
            keep.close()
            if self.render_listener is not None:
                self.render_listener.close()
        self.children.clear()

    # --- running children ------------------------------------------------------------------------------

    def _client_event(self, record: _Child) -> None:
        assert record.client is not None
        try:
            message, fds = recv(record.client)
        except OSError:
            message, fds = None, []
        close_fds(fds)
        if message is None:  # the client is gone (killed, even by SIGKILL): so is its run
            _try(os.killpg, record.pid, signal.SIGKILL)
            _try(os.kill, record.pid, signal.SIGKILL)
            self._drop_client(record)
        elif message.get("signal") in _FORWARDABLE:
            _try(os.killpg, record.pid, _FORWARDABLE[message["signal"]])

    def _reap(self, record: _Child) -> None:
        _, status = os.waitpid(record.pid, 0)
        self.selector.unregister(record.pidfd)
        os.close(record.pidfd)
        self.children.pop(record.pid, None)
        if record.pid == self.renderer:
            _log(f"the chart renderer {record.pid} ended ({os.waitstatus_to_exitcode(status)}); a new one "
                 "starts with the next run")
            self._drop_renderer_listener()
            self.write_status()
        if record.client is not None:
            try:
                send(record.client, {"exit": os.waitstatus_to_exitcode(status)})
            except OSError:
                pass
            self._drop_client(record)

    def _drop_client(self, record: _Child) -> None:
        if record.client is not None:
            self.selector.unregister(record.client)
            record.client.close()
            record.client = None


def _try(call: Any, *args: Any) -> None:
    try:
        call(*args)
    except OSError:
        pass


def _log(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} warm starter {os.getpid()}: {line}", file=sys.stderr, flush=True)


def _preload() -> float:
    from evalduck.flows.settings import apply_process_defaults

    apply_process_defaults()
    started = time.monotonic()
    for name in PRELOADS:
        importlib.import_module(name)
    from evalduck.flows.prefect_settings import remember_settings
    from evalduck.scorers import PREBUILT
    from evalduck.scorers._cache_key import source_digest

    remember_settings()
    # The prebuilt scorers' code digests (cache keys): read and parsed here once, not in every run. A child
    # inherits them only while the code is the starter's own (an edit changes code_fingerprint: refused).
    for entry in PREBUILT.values():
        source_digest(entry.factory.__module__)
    took = time.monotonic() - started
    _log(f"preloaded {len(PRELOADS)} modules in {took:.1f} s")
    return took


def _after(pid: int, limit_s: float = 300.0) -> None:
    """Wait for the run that started this starter to end, within a limit: the preloads take ~5-10 s of CPU,
    which on a small machine would slow that run down; the next run needs them, not this one."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # already gone
        return
    select.select([pidfd], [], [], limit_s)
    os.close(pidfd)


def _check_folder(state_dir: Path) -> None:
    """Exit unless the sockets' folder is the state folder or one of this user's only (wire.own_folder)."""
    folder = socket_path(state_dir).parent
    try:
        if folder != state_dir:
            own_folder(folder)
    except OSError as exc:
        _not_serving(state_dir, str(exc))


def _not_serving(state_dir: Path, why: str) -> NoReturn:
    """Exit, saying why in the log and in the status file (a client's `-v` prints it); the last import time
    is kept for the folder's next starter."""
    _log(f"not serving: {why}")
    kept = {k: v for k, v in (starter_status(state_dir) or {}).items() if k == "preload_s"}
    write_starter_status(state_dir, phase="not serving", reason=why, **kept)
    sys.exit(1)


def main(argv: list[str] | None = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else argv
    state_dir = Path(args[0]).resolve()
    if not SUPPORTED:  # its pidfds, SO_PEERCRED and prctl: ensure_starter starts none there, nor should anyone
        _not_serving(state_dir, UNSUPPORTED_WHY)
    _check_folder(state_dir)  # before the waits and the preloads: a folder that is not ours ends it at once
    previous = starter_status(state_dir) or {}
    expected = previous.get("preload_s") if isinstance(previous.get("preload_s"), (int, float)) else DEFAULT_PRELOAD_S
    if len(args) == 3 and args[1] == "--after":
        write_starter_status(state_dir, phase="waiting", after=int(args[2]), expected_s=expected)
        _after(int(args[2]))
    # A run that starts now finds this in the status file and waits for the preloads when they will be done
    # sooner than its own imports (flows/local/warm/client.py): runs back to back are forked from here.
    write_starter_status(state_dir, phase="importing", since=time.time(), expected_s=expected)
    starter = Starter(state_dir)  # the fingerprint is taken before the imports it stands for
    took = _preload()
    threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if threads:
        _not_serving(state_dir, f"the preloads started threads {threads}, which a forked child would inherit broken")

    def stop(_signum: int, _frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    _check_folder(state_dir)  # again, right before the binds: it may have gone meanwhile
    starter.ensure_renderer()  # it starts its JavaScript runtime while the starter waits for the first run
    starter.listen()
    starter.preload_s = took
    starter.write_status()
    _log(f"listening on {starter.path}")
    try:
        starter.serve_forever()
    except SystemExit:
        pass
    finally:
        starter.close()
    os._exit(0)  # nothing to flush or tear down: not the seconds of finalising every preloaded module


if __name__ == "__main__":
    main()
