"""Slow, independent set-ups of the e2e tests, started in the background as soon as the session is collected.

Why: each is a real server start (the e2e installation, a folder's first `evalduck run`, a CI run's temporary
server: 35-55 s each here), mostly on one core, and the e2e tests run last (tests/conftest.py), after
minutes of CLI and installation tests (`make test` runs them in one process, beside another for the rest of the
suite) that wait on their subprocesses much of the time. Started then, they are done by the time their tests
ask; the tests assert exactly what they asserted when they did the work themselves.

One job at a time, in the order they were registered, so the jobs take at most one core from the tests
running meanwhile. A job registered ``late`` starts with the first e2e test instead (the e2e installation:
idle, its worker's 1 s polls and its scheduler's 2 s loop cost ~5 s of CPU a minute; the e2e tests that need it
run after the others, tests/conftest.py). A job only starts subprocesses, with the environment the session had when it was collected
(never os.environ at run time, which a test may be patching at that moment), in a folder of its own. Only the
jobs some selected test asks for (by fixture name) are started; `--collect-only` starts none.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

__all__ = ("Context", "job", "launch", "result", "finish")

T = TypeVar("T")


@dataclass
class Context:
    """What a job gets: its own folder, the collected session's environment, and a place for its clean-up."""

    root: Path
    env: dict[str, str]
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def enter(self, manager: contextlib.AbstractContextManager[T]) -> T:
        """Enter ``manager`` now; leave it at the session's end."""
        stack = contextlib.ExitStack()
        self.cleanups.append(stack.close)
        return stack.enter_context(manager)


_registry: dict[str, Callable[[Context], Any]] = {}
_late: set[str] = set()
_futures: dict[str, Future[Any]] = {}
_contexts: list[Context] = []
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_base: Path | None = None


def job(name: str, late: bool = False) -> Callable[[Callable[[Context], Any]], Callable[[Context], Any]]:
    """Register ``fn`` as the early job behind the fixture ``name``; ``late``: launched with the first e2e test."""

    def register(fn: Callable[[Context], Any]) -> Callable[[Context], Any]:
        _registry[name] = fn
        if late:
            _late.add(name)
        return fn

    return register


def launch(names: set[str], late: bool = False) -> None:
    """Start the registered jobs among ``names`` (the fixtures the selected tests use), in registration order;
    the ``late`` ones too when ``late``."""
    global _pool, _base
    wanted = [name for name in _registry if name in names and name not in _futures and (late or name not in _late)]
    if not wanted:
        return
    env = dict(os.environ)
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="e2e-early")
            _base = Path(tempfile.mkdtemp(prefix="evalduck-e2e-early-"))
        for name in wanted:
            context = Context(root=_base / name, env=dict(env))
            context.root.mkdir()
            _contexts.append(context)
            _futures[name] = _pool.submit(_registry[name], context)


def result(name: str) -> Any:
    """The job's result (waiting for it); started now, in the foreground, if nothing launched it."""
    if name not in _futures:
        launch({name}, late=True)
    return _futures[name].result()


def finish() -> None:
    """At the session's end: drop the jobs not started yet (a session stopped early, `-x`), wait for the one
    running, then run the clean-ups, last registered first."""
    if _pool is None:
        return
    _pool.shutdown(wait=True, cancel_futures=True)
    for context in reversed(_contexts):
        for cleanup in reversed(context.cleanups):
            with contextlib.suppress(Exception):
                cleanup()
    if _base is not None:
        shutil.rmtree(_base, ignore_errors=True)
