"""The judge child's side (flows/judge/process.py starts it): serve judge and model requests with
``LiteLLMTransport`` on a socket, one coroutine per request, each answer sent back as it finishes. Its own
module so that the child imports only what it needs."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
from multiprocessing.connection import Connection
from typing import Any

from evalduck.scorers import JudgeError, LiteLLMTransport

__all__ = ("child_main",)


def _error_reply(exc: BaseException) -> tuple[str, str | JudgeError, float | None]:
    if isinstance(exc, JudgeError):  # pickled whole: its class, kind, status and retry_after cross intact
        return "judge", exc, None
    return "other", f"{type(exc).__name__}: {exc}", None


# litellm's lists of logging callbacks: with any set, a warm-up completion would be logged as if it were real.
_CALLBACK_LISTS = ("callbacks", "success_callback", "_async_success_callback", "failure_callback",
                   "_async_failure_callback", "input_callback")


async def _warm_up() -> None:
    """Pays for litellm's first completion in the process, far dearer than later ones (lazy imports, pydantic
    models built on first use: docs/benchmarks.md, section "Judge-bound later runs"), while the parent still
    sets up its run rather than on its first judge requests. A mock completion (``mock_response``): nothing
    leaves the process. Skipped when litellm has a logging callback, which would record the mock call."""
    import litellm

    if any(getattr(litellm, name, None) for name in _CALLBACK_LISTS):
        return
    try:
        await litellm.acompletion(model="openai/evalduck-warm-up", api_key="-", mock_response=".",
                                  messages=[{"role": "user", "content": "."}])
    except Exception:  # noqa: BLE001 - only a warm-up: the first real request pays what this did not
        pass


def _child(conn: Connection) -> None:
    """The child: one coroutine per request, answers sent back as they finish."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # noqa: F401 - imported while the parent sets up its run, not during the first request

    # What exists now (litellm, and in a child forked by the warm starter Prefect and the flows too: ~490,000
    # objects) stays out of the collector: a full collection scanned it all, holding every answer in flight
    # for 0.8-1.8 s per run under load (docs/benchmarks.md). The run's own process does the same (frozen_gc).
    gc.freeze()

    async def serve() -> None:
        transport = LiteLLMTransport()
        loop = asyncio.get_running_loop()
        closed = loop.create_future()
        pending: set[asyncio.Task[None]] = set()

        async def answer(req_id: int, args: tuple[Any, ...]) -> None:
            try:
                content, usage = await transport.request(*args)
                reply: tuple[Any, ...] = (req_id, "ok", content, usage.model_dump())
            except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
                reply = (req_id, "error", *_error_reply(exc))
            try:
                conn.send(reply)
            except OSError:  # the parent is gone: nobody to answer, so stop quietly
                if not closed.done():
                    closed.set_result(None)

        def readable() -> None:
            while not closed.done() and conn.poll():
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    message = None
                if message is None:  # the parent stopped us, or is gone
                    closed.set_result(None)
                elif message[0] == "env":
                    os.environ.clear()
                    os.environ.update(message[1])
                else:
                    task = loop.create_task(answer(*message[1:]))
                    pending.add(task)
                    task.add_done_callback(pending.discard)

        await _warm_up()  # requests sent meanwhile wait in the socket
        loop.add_reader(conn.fileno(), readable)
        await closed
        loop.remove_reader(conn.fileno())
        if pending:
            await asyncio.wait(pending, timeout=5)

    asyncio.run(serve())


def child_main(fd: int) -> None:
    """The child's entry point: serve requests on the socket ``fd`` until the parent closes it or exits.

    Ctrl-C in a terminal reaches the whole process group; the parent decides what it means, and the child
    ends when the parent closes the socket (or dies)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _child(Connection(fd))
