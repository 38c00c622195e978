"""The judge seam: where a scorer's judge requests (and a ``model:`` target's) go.

A ``JudgeTransport`` takes one request (settings, messages, response format, label, repair flag) and
returns the answer's text and a ``JudgeUsage``; it raises ``JudgeTransientError`` or ``JudgeConfigError``.
``LiteLLMTransport`` (litellm in this process) is the default. An orchestrator passes its own explicitly:
``await step.arun(ctx, transport=t)``, ``await scorer.arun(..., transport=t)``, ``complete(..., transport=t)``.

>>> from scorers.judge import JudgeTransport, LiteLLMTransport
>>> isinstance(LiteLLMTransport(), JudgeTransport)
True
"""

from __future__ import annotations

from scorers._judge import JudgeSettings
from scorers._result import JudgeUsage
from scorers._transport import JudgeTransport, LiteLLMTransport, complete

__all__ = ("JudgeTransport", "LiteLLMTransport", "complete", "JudgeSettings", "JudgeUsage")
