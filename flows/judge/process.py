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

One child serves one run at a time; an idle child is kept for the next run of the same process (litellm's
import takes seconds) and stopped at exit. A child that dies is replaced on the next request, and the
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

__all__ = (
    "JudgeProcess",
    "JudgeProcessError",
    "child_main",
    "leased_judge_process",
    "litellm_settings_made_in_python",
    "prestart",
)

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
    the child, which runs it with ``LiteLLMTransport``)."""

    def __init__(self) -> None:
        self._conn: Connection | None = None
        self._proc: Any = None  # a subprocess.Popen, or what ``start_child`` gives
        self._loop: asyncio.AbstractEventLoop | None = None
        self._futures: dict[int, asyncio.Future[Any]] = {}
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
            self._proc = start_child(child, env)
        finally:
            child.close()
        self._conn = Connection(parent.detach())
        self._env = dict(os.environ)  # what the child was started with
        return self

    def detach(self) -> None:
        """Leave the event loop (the run is over); the child stays for the next run."""
        if self._loop is not None and self._conn is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._conn.fileno())
        self._loop = None
        self._fail_all("the run ended")

    def stop(self) -> None:
        self.detach()
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.send(None)
        if self._proc is not None:
            try:
                self._proc.wait(timeout=2)  # an idle child (one still importing litellm too) has nothing to lose
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._conn is not None:
            self._conn.close()
        self._conn = self._proc = None

    def _ready(self) -> Connection:
        """Attached to the running loop, with a live child (a dead one is replaced)."""
        if not self.alive:
            self.stop()
            self.start()
        assert self._conn is not None
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self.detach()
            self._loop = loop
            loop.add_reader(self._conn.fileno(), self._readable)
        return self._conn

    def _readable(self) -> None:
        conn = self._conn
        try:
            while conn is not None and conn.poll():
                req_id, status, *rest = conn.recv()
                future = self._futures.pop(req_id, None)
                if future is None or future.done():
                    continue
                if status == "ok":
                    future.set_result((rest[0], JudgeUsage.model_validate(rest[1])))
                    continue
                kind, message, _ = rest
                future.set_exception(message if kind == "judge" else RuntimeError(message))
        except (EOFError, OSError):  # the child is gone: its requests are retried by a new one
            if self._loop is not None and conn is not None:
                self._loop.remove_reader(conn.fileno())
            self._loop = None
            self._fail_all(f"the judge process exited (exit code {self._proc.poll() if self._proc else '?'})")

    def _fail_all(self, why: str) -> None:
        futures, self._futures = self._futures, {}
        for future in futures.values():
            if not future.done():
                future.set_exception(JudgeProcessError(f"{why} before answering"))

    async def request(
        self, settings: JudgeSettings, messages: list[dict[str, str]], response_format: Any, label: str, repair: bool
    ) -> tuple[str | None, JudgeUsage]:
        req_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        message = ("request", req_id, (settings, messages, response_format, label, repair))
        for attempt in (1, 2):  # a child that died since the last request (not yet seen as dead): a new one
            conn = self._ready()
            try:
                env = dict(os.environ)
                if env != self._env:
                    conn.send(("env", env))
                    self._env = env
                self._futures[req_id] = future
                conn.send(message)
                break
            except OSError as exc:
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
            self._futures.pop(req_id, None)


_idle: list[JudgeProcess] = []  # children between runs of this process (the next run leases one)
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
            _idle.append(JudgeProcess().start())


@contextlib.contextmanager
def leased_judge_process() -> Iterator[JudgeProcess]:
    """A child for one run: an idle one from an earlier run of this process, else a new one (started now,
    so litellm's import overlaps the run's set-up). Returned for reuse when the run ends."""
    with _idle_lock:
        process = _idle.pop() if _idle else None
    if process is None or not process.alive:
        process = JudgeProcess().start()
    try:
        yield process
    finally:
        process.detach()
        with _idle_lock:
            _idle.append(process)
