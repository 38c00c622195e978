"""Every error evalduck raises on purpose, under one base, named for what happened."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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
    "error_rule",
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


def error_rule(error: Mapping[str, Any]) -> str:
    """One pydantic error's message as a rule to write after a name: "Value error, " dropped, the first
    letter lower-cased ("input should be greater than 0"). ``describe_validation`` and the CLI's
    option-named errors (``flows/cli/errors.py``) both build on it."""
    msg = str(error.get("msg") or "is not valid").removeprefix("Value error, ")
    return msg[:1].lower() + msg[1:]


def describe_validation(exc: ValidationError, noun: str = "option", *, known: Sequence[str] = ()) -> str:
    """pydantic errors as "`name` must ..., got value" parts joined by "; ".

    ``noun`` is what an unknown key is called ("unknown option `x`"); ``known``, when given, lists the keys
    there are after it ("(fields: id, input)"). A required key that is absent is "missing `name`"; a
    validator's message that already names its field ("`output[0]`.role must ...") is kept as it is.
    """
    parts = []
    for err in exc.errors():
        name = ".".join(str(p) for p in err["loc"]) or "options"
        rule = error_rule(err)
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown {noun} `{name}`" + (f" ({noun}s: {', '.join(known)})" if known else ""))
        elif err["type"] == "missing":
            parts.append(f"missing `{name}`")
        elif rule.startswith("`"):
            parts.append(rule)
        else:
            parts.append(f"`{name}` {rule}, got {err.get('input')!r:.80}")
    return "; ".join(parts)
