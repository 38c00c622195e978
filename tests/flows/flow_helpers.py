"""Helpers shared by the flow tests (datasets and scorer specs pointed at the fake servers)."""

from __future__ import annotations

from typing import Any

from evalduck.scorers.testing.fake_openai import FakeOpenAIServer


def judge_scorer(server: FakeOpenAIServer, **options: Any) -> dict[str, Any]:
    """The answer-relevancy scorer as a spec, judged by ``server`` (fast timeouts for tests)."""
    return {
        "id": "answer-relevancy-scorer",
        "options": {"model": "openai/fake-judge", "api_base": server.base_url, "timeout": 5, **options},
    }


def rows(n: int, prefix: str = "q") -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}-{i}",
            "input": f"What is the capital of country number {i}?",
            "output": f"The capital of country {i} is City{i}. It has a famous museum.",
            "groundTruth": f"City{i}.",
        }
        for i in range(n)
    ]
