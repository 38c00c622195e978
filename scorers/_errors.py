"""Every error evalduck raises on purpose, under one base, named for what happened."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = (
    "EvalduckError",
    "ConfigError",
    "ScorerInputError",
    "StepResultError",
    "JudgeError",
    "JudgeTransientError",
    "JudgeConfigError",
    "InvalidJudgeAnswer",
    "describe_validation",
)


class EvalduckError(Exception):
    """Base of every evalduck error."""


class ConfigError(EvalduckError, ValueError):
    """Bad options at creation, e.g. "`uncertainty_weight` must be between 0 and 1, got 1.5"."""


class ScorerInputError(EvalduckError, ValueError):
    """A run the scorer cannot score: missing output, non-string message content, ..."""


class StepResultError(EvalduckError, TypeError):
    """A step returned something that is not JSON-serialisable (or not a number for generate_score)."""


class JudgeError(EvalduckError):
    """A judge (LLM) call failed."""


class JudgeTransientError(JudgeError):
    """Worth retrying: 429, 5xx, timeouts, connection errors, invalid answers.

    ``retry_after`` is the server's Retry-After in seconds, when it sent one.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class JudgeConfigError(JudgeError):
    """Never worth retrying: authentication, bad request, unknown model."""


class InvalidJudgeAnswer(JudgeTransientError):
    """The judge's answer failed validation, and so did its answer to the one repair request."""


def describe_validation(exc: ValidationError, noun: str = "option") -> str:
    """pydantic errors as "`name` must ..., got value" lines."""
    parts = []
    for err in exc.errors():
        name = ".".join(str(p) for p in err["loc"]) or "options"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown {noun} `{name}`")
        elif msg.startswith("`"):
            parts.append(msg)
        else:
            parts.append(f"`{name}` {msg[0].lower()}{msg[1:]}, got {err.get('input')!r:.80}")
    return "; ".join(parts)
