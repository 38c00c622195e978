"""Flow tests: one Prefect test harness for the session (PREFECT_HOME is already private, see
tests/conftest.py), and fake OpenAI-compatible servers on 127.0.0.1 for the judge and the target."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalduck.scorers.testing.fake_openai import FakeOpenAIServer


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def workdir(tmp_path: Path) -> dict[str, str]:
    """A private results database and step cache per test."""
    return {"db": str(tmp_path / "evals.duckdb"), "cache_dir": str(tmp_path / "cache")}
