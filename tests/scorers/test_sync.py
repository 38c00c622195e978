"""run_sync: the one way evalduck runs a coroutine from synchronous code (Scorer.run, the eval flow's body)."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from evalduck.scorers import create_scorer, run_sync

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


async def _where() -> tuple[str, str]:
    await asyncio.sleep(0)
    return threading.current_thread().name, WHO.get()


def test_without_a_loop_it_runs_here() -> None:
    token = WHO.set("caller")
    try:
        assert run_sync(_where()) == (threading.current_thread().name, "caller")
    finally:
        WHO.reset(token)


def test_inside_a_running_loop_a_helper_thread_sees_the_callers_context() -> None:
    async def caller() -> tuple[str, str]:
        WHO.set("caller")
        return run_sync(_where(), thread_name="helper")

    assert asyncio.run(caller()) == ("helper", "caller")


def test_errors_reach_the_caller() -> None:
    async def boom() -> None:
        raise KeyError("x")

    async def caller() -> None:
        run_sync(boom())

    with pytest.raises(KeyError):
        run_sync(boom())
    with pytest.raises(KeyError):
        asyncio.run(caller())


def test_scorer_run_inside_a_loop_uses_it() -> None:
    def score(ctx: object) -> float:
        return 1.0 if WHO.get() == "caller" else 0.0

    scorer = create_scorer(id="ctx-check", version="1", generate_score=score)

    async def caller() -> float:
        WHO.set("caller")
        return scorer.run(input="q", output="a").score

    assert asyncio.run(caller()) == 1.0
