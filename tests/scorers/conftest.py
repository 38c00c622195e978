"""Fixtures for scorer tests: a fresh fake judge server per test, and retries that never really sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from evalduck.scorers import Scorer, ScorerInput, _retry
from evalduck.scorers.testing.fake_openai import CANARY_KEY as FAKE_KEY
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def judge(server: FakeOpenAIServer) -> dict[str, Any]:
    """Judge options that reach the fake server through litellm's OpenAI provider path."""
    return {"model": "openai/fake-judge", "api_base": server.base_url, "extra": {"api_key": FAKE_KEY}, "timeout": 10}


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff delays the standalone retry loop asked for, without sleeping them."""
    asked: list[float] = []

    async def record(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(_retry, "_sleep", record)
    return asked


@pytest.fixture(scope="session")
def shared_server() -> Iterator[FakeOpenAIServer]:
    """One fake judge for the whole session (starting one per test adds up); use ``fake`` to get it reset."""
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def fake(shared_server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    """The session's fake judge with no scripted replies and a request count of 0."""
    shared_server.reset()
    yield shared_server
    shared_server.reset()


@pytest.fixture
def fake_judge(fake: FakeOpenAIServer) -> dict[str, Any]:
    """Judge options that reach ``fake``, with no retries (a test sees the first failure)."""
    return {"model": "openai/fake-judge", "api_base": fake.base_url, "extra": {"api_key": FAKE_KEY}, "timeout": 10, "retries": 0}


StepRunner = Callable[..., Any]


@pytest.fixture
def step_result() -> StepRunner:
    """``step_result(scorer, step, results, **run)``: one step's result on given earlier results, as the
    orchestrator runs it (``output`` defaults to "")."""

    def run(scorer: Scorer, step: str, results: dict[str, Any] | None = None, **fields: Any) -> Any:
        ctx = scorer.context_for(step, ScorerInput.from_call((), {"output": "", **fields}), results or {})
        return asyncio.run(scorer.step(step).arun(ctx)).result

    return run
