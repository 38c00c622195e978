"""Test helpers shipped with the library: a loopback OpenAI-compatible judge server."""

from __future__ import annotations

from scorers.testing.fake_openai import FakeOpenAIServer, Reply

__all__ = ("FakeOpenAIServer", "Reply")
