"""Test helpers shipped with the library: a loopback OpenAI-compatible judge server.

``FakeOpenAIServer`` and ``Reply`` are loaded on first use, so that ``python -m evalduck.scorers.testing.fake_openai``
does not import its own module twice (runpy warns when the package has already imported it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, Reply

__all__ = ("FakeOpenAIServer", "Reply")


def __getattr__(name: str) -> Any:
    if name in __all__:
        from evalduck.scorers.testing import fake_openai

        return getattr(fake_openai, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
