"""A run's judge and model requests (litellm) in a child process, off the flow's event loop: one
``evalduck.scorers.judge.JudgeTransport``, which the flow hands to the engine in place of the in-process default.

Why: litellm costs ~10-15 ms of CPU per request (building it through the OpenAI SDK, parsing and pricing
the answer, its logging payload), partly in executor threads that contend for the flow process's GIL. On
the flow's one event loop that work queued between Prefect's per-task-run bookkeeping, and every judge
step waited for it (docs/benchmarks.md). In a child process it runs on the other core; the flow's loop
only pickles the request and the answer.

The child is its own program (``python -c "from evalduck.flows.judge.child import child_main; ..."``) started with
``subprocess``, never with ``multiprocessing``: spawn and forkserver re-import the caller's ``__main__``, so
a user's script without a ``__main__`` guard ran again in the child (its side effects too) and the child
died; fork copies a process with threads. It talks to the parent over a socket pair with multiprocessing's
``Connection`` framing (pickled tuples).

The child calls exactly what the flow process would have called (``evalduck.scorers.judge.LiteLLMTransport``: litellm
with the same error classification), so answers, errors, retries and usage are the same. It sees the
parent's environment as of each request (provider keys set or removed later included), but not
Python-level litellm settings made in the parent (``litellm.success_callback``, ``litellm.api_key``...):
``judge_process=False`` keeps requests in the flow's process for those.

One child serves every run of the process, runs side by side included (a sweep's: a reader thread hands each
answer to the event loop that asked); it is kept for the next run (litellm's import takes seconds) and stopped
at exit. A child that dies is replaced on the next request, and the
requests it held fail as transient errors, so Prefect retries them.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from evalduck.flows.judge.child import child_main  # the child's entry point, also named from here
from evalduck.scorers import JudgeSettings, JudgeTransientError, JudgeUsage

__all__ = ("JudgeProcess", "JudgeProcessError", "child_main", "leased_judge_process", "litellm_settings_made_in_python",
           "prestart")

# Beyond the request's own timeout (the child enforces it): a child that never answers.
_BACKSTOP_S = 30.0


# litellm's module-level settings that change what a request does or who hears of it, with their values
# after a fresh `import litellm` (tests/flows/test_judge_process.py checks them against one). A child
# process starts from these, whatever the caller set in Python.
LITELLM_DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(
        ("success_callback", "failure_callback", "callbacks", "_async_success_callback", "_async_failure_callback",
         "input_callback", "service_callback", "custom_provider_map"),
        [],
    ),
    **dict.fromkeys(
        ("api_key", "api_base", "api_version", "openai_key", "anthropic_key", "azure_key", "num_retries", "headers",
         "cache", "client_session", "aclient_session"),
        None,
    ),
    **dict.fromkeys(
        ("drop_params", "modify_params", "set_verbose", "return_response_headers", "enable_json_schema_validation",
         "force_ipv4"),
        False,
    ),
    "model_alias_map": {},
    "request_timeout": 6000.0,
    "ssl_verify": True,
}


def litellm_settings_made_in_python() -> list[str]:
    """The litellm settings this process changed in Python, which a child process would not see.

    Only looks when litellm is already imported: a process that never imported it changed nothing."""
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return []
    return [name for name, default in LITELLM_DEFAULTS.items() if getattr(litellm, name, default) != default]


class JudgeProcessError(JudgeTransientError):
    """The judge process died or did not answer; transient, so the step is retried (by a new child)."""


def _child_command(fd: int) -> list[str]:
    code = (
        f"from evalduck.flows.judge.child import child_main; child_main({fd})"
    )
    return [sys.executable, "-P", "-c", code]  # -P: no working directory on sys.path


def popen_child(child: socket.socket, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A new interpreter running ``child_main`` on ``child``."""
    return subprocess.Popen(_child_command(child.fileno()), pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, env=env)


# How a child is started. A run forked by the warm starter (flows/local/warm/child.py) replaces it with a request
# to the starter, which forks a child with litellm already imported; anything with Popen's poll/wait/kill.
start_child: Callable[[socket.socket, dict[str, str]], Any] = popen_child


class JudgeProcess:
    """One child and its pipe; a ``evalduck.scorers.judge.JudgeTransport`` (its ``request`` sends one request to
    the child, which runs it with ``LiteLLMTransport``). A reader thread hands each answer to the event loop that
    asked, so one child serves any number of runs of this process at once, each on its own loop (a sweep's runs
    side by side: one litellm import and one ~0.2 GB child, not one per run)."""

    def __init__(self) -> None:
        self._conn: Connection | None = None
        self._proc: Any = None  # a subprocess.Popen, or what ``start_child`` gives
        self._lock = threading.RLock()  # the pipe and the child
        self._waiting = threading.Lock()  # the requests waiting for an answer (the reader takes only this one)
        self._futures: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        self._ids = itertools.count()
        self._env: dict[str, str] | None = None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> "JudgeProcess":
        _stop_idle_at_exit()
        parent, child = socket.socketpair()
        env = dict(os.environ)
        env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            proc = start_child(child, env)
        finally:
            child.close()
        conn = Connection(parent.detach())
        with self._lock:
            self._proc, self._conn, self._env = proc, conn, dict(os.environ)  # what the child was started with
        threading.Thread(target=self._read, args=(conn,), name="evalduck-judge-reader", daemon=True).start()
        return self

    def detach(self) -> None:
        """A run that used the child is over: the requests it left waiting (its loop is closed) are dropped; the
        child stays for the other runs and the next."""
        with self._waiting:
            for req_id, (loop, _) in list(self._futures.items()):
                if loop.is_closed():
                    del self._futures[req_id]

    def stop(self) -> None:
        with self._lock:
            conn, proc, self._conn, self._proc = self._conn, self._proc, None, None
            self._fail_all("the judge process was stopped")
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.send(None)
        if proc is not None:
            try:
                proc.wait(timeout=2)  # an idle child (one still importing litellm too) has nothing to lose
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if conn is not None:
            conn.close()

    def _ready(self) -> Connection:
        """The pipe to a live child (a dead one is replaced); the caller holds the lock."""
        if not self.alive:
            self.stop()
            self.start()
        assert self._conn is not None
        return self._conn

    def _read(self, conn: Connection) -> None:
        """The reader thread: every answer to the loop of the request it answers, until the child is gone."""
        try:
            while True:
                req_id, status, *rest = conn.recv()
                with self._waiting:
                    waiting = self._futures.pop(req_id, None)
                if waiting is not None:
                    _settle_on(waiting, status, rest)
        except (EOFError, OSError):  # the child is gone (or the pipe closed by stop): retried by a new one
            if self._conn is conn:  # not a child stopped on purpose (stop failed its requests already)
                proc = self._proc
                self._fail_all(f"the judge process exited (exit code {proc.poll() if proc is not None else '?'})")
        except Exception as exc:  # noqa: BLE001 - a message this parent cannot read: its requests fail, retried
            self._fail_all(f"the judge process's answer could not be read ({type(exc).__name__}: {exc})")

    def _fail_all(self, why: str) -> None:
        with self._waiting:
            futures, self._futures = self._futures, {}
        for waiting in futures.values():
            _settle_on(waiting, "error", ("transport", JudgeProcessError(f"{why} before answering"), None))

    async def request(
        self, settings: JudgeSettings, messages: list[dict[str, str]], response_format: Any, label: str, repair: bool
    ) -> tuple[str | None, JudgeUsage]:
        req_id = next(self._ids)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        message = ("request", req_id, (settings, messages, response_format, label, repair))
        for attempt in (1, 2):  # a child that died since the last request (not yet seen as dead): a new one
            with self._lock:
                conn = self._ready()
                try:
                    env = dict(os.environ)
                    if env != self._env:
                        conn.send(("env", env))
                        self._env = env
                    with self._waiting:
                        self._futures[req_id] = (loop, future)
                    conn.send(message)
                    break
                except OSError as exc:
                    with self._waiting:
                        self._futures.pop(req_id, None)
                    if attempt == 2:
                        raise JudgeProcessError(f"{label}: the judge process is gone ({exc})") from None
                    self.stop()
        try:
            return await asyncio.wait_for(future, settings.timeout + _BACKSTOP_S)
        except asyncio.TimeoutError:
            raise JudgeProcessError(
                f"{label}: the judge process gave no answer within {settings.timeout + _BACKSTOP_S:.0f}s"
            ) from None
        finally:
            with self._waiting:
                self._futures.pop(req_id, None)


def _settle_on(waiting: tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]], status: str, rest: Any) -> None:
    """An answer (or the child's end) to the request's own loop, from whichever thread has it."""
    loop, future = waiting

    def settle() -> None:
        if future.done():
            return
        if status == "ok":
            future.set_result((rest[0], JudgeUsage.model_validate(rest[1])))
            return
        kind, message, _ = rest
        future.set_exception(message if kind in ("judge", "transport") else RuntimeError(message))

    with contextlib.suppress(RuntimeError):  # that loop is closed: its run is over, nobody waits
        loop.call_soon_threadsafe(settle)


_idle: list[JudgeProcess] = []  # the process's one child, kept between runs and shared by runs side by side
_idle_lock = threading.Lock()
_exit_hook: list[bool] = []
_exit_hook_lock = threading.Lock()  # its own: start() runs under _idle_lock (prestart)


def _stop_idle() -> None:
    with _idle_lock:
        while _idle:
            _idle.pop().stop()


def _stop_idle_at_exit() -> None:
    """Once, when the first child starts (never at import): idle children are stopped when this process
    exits (each also stops by itself when it finds its parent gone)."""
    with _exit_hook_lock:
        if not _exit_hook:
            atexit.register(_stop_idle)
            _exit_hook.append(True)


def prestart() -> None:
    """Start a child now for a run of this process that will lease it, so that litellm's import in the
    child overlaps the caller's own start-up (Prefect's import, the server, the run's set-up) instead of
    delaying the run's first judge requests; an unused child is stopped at exit like an idle one."""
    with _idle_lock:
        if not any(process.alive for process in _idle):
            _idle[:] = [JudgeProcess().start()]


@contextlib.contextmanager
def leased_judge_process() -> Iterator[JudgeProcess]:
    """The process's child for one run: the one other runs use now or an earlier run left, else a new one
    (started now, so litellm's import overlaps the run's set-up). Kept for the next run when the run ends."""
    with _idle_lock:
        if not _idle:
            _idle.append(JudgeProcess())
        process = _idle[0]
        with process._lock:
            if not process.alive:  # never started, or gone since: a new child (its first request would, later)
                process.stop()
                process.start()
    try:
        yield process
    finally:
        process.detach()
