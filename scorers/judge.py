"""The judge seam: where a scorer's judge requests (and a ``model:`` target's) go.

A ``JudgeTransport`` takes one request (settings, messages, response format, label, repair flag) and
returns the answer's text and a ``JudgeUsage``; it raises a ``JudgeError`` whose class says what to do and
whose ``kind`` (a ``JudgeErrorKind``) and ``status`` say what happened:

- ``JudgeConfigError``: a configuration error, so every request with these settings fails the same way
  (key rejected or missing, model not found, nothing listening at api_base, a bad URL or host, an unknown
  provider). Never retried; an orchestrator can stop the run at the first one.
- ``JudgeTransientError``: worth retrying (429 with ``retry_after``, 5xx, timeouts, connections or bodies
  that broke off, ``InvalidJudgeAnswer``).
- ``JudgeRequestError``: this one request was refused (HTTP 400, 422, ...); not retried, but other requests
  may succeed, so it is no reason to stop a run.

``LiteLLMTransport`` (litellm in this process) is the default. An orchestrator passes its own explicitly:
``await step.arun(ctx, transport=t)``, ``await scorer.arun(..., transport=t)``, ``complete(..., transport=t)``.

>>> from evalduck.scorers.judge import JudgeTransport, LiteLLMTransport
>>> isinstance(LiteLLMTransport(), JudgeTransport)
True
"""

from __future__ import annotations

from evalduck.scorers._errors import (
    InvalidJudgeAnswer,
    JudgeConfigError,
    JudgeError,
    JudgeErrorKind,
    JudgeRequestError,
    JudgeTransientError,
)
from evalduck.scorers._judge import JudgeSettings
from evalduck.scorers._redact import redact_url
from evalduck.scorers._result import JudgeUsage
from evalduck.scorers._transport import JudgeTransport, LiteLLMTransport, complete

__all__ = (
    "JudgeTransport",
    "LiteLLMTransport",
    "complete",
    "JudgeSettings",
    "JudgeUsage",
    "JudgeError",
    "JudgeErrorKind",
    "JudgeConfigError",
    "JudgeTransientError",
    "JudgeRequestError",
    "InvalidJudgeAnswer",
    "redact_url",
)
