"""Run a coroutine to its end from synchronous code, even from a thread whose event loop is running."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ("run_sync",)

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T], *, thread_name: str = "evalduck-run") -> T:
    """``asyncio.run(coro)``; in a thread that already runs a loop (a notebook, an async caller), the same
    on a helper thread that this one waits for.

    The helper runs in a copy of the caller's contextvars, so context set before the call (progress
    sinks, judge routing, Prefect's run context) is seen inside, as it is without the helper. The
    coroutine's exception is raised here. The coroutine never runs inside an ``except`` block: there every
    exception it raised would chain to this check's RuntimeError instead of its own cause, which the judge
    transport reads to tell a refused connection from a broken body.
    """
    try:
        asyncio.get_running_loop()
        loop_running = True
    except RuntimeError:
        loop_running = False
    if not loop_running:
        return asyncio.run(coro)
    box: dict[str, Any] = {}
    ctx = contextvars.copy_context()

    def target() -> None:
        try:
            box["value"] = ctx.run(asyncio.run, coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name=thread_name)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
