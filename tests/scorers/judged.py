"""Shared by the judge-scorer tests."""

from __future__ import annotations

JUDGE = {"model": "openai/fake-judge"}  # judge options for tests that never send a request
