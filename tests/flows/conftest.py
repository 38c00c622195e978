"""Flow tests: fake OpenAI-compatible servers on 127.0.0.1 for the judge and the target (the session's Prefect
test harness is tests/conftest.py's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalduck.scorers.testing.fake_openai import FakeOpenAIServer


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def workdir(tmp_path: Path) -> dict[str, str]:
    """A private results database and step cache per test."""
    return {"db": str(tmp_path / "evals.duckdb"), "cache_dir": str(tmp_path / "cache")}
