"""The library's errors, under evalduck's one base (`evalduck.errors.EvalduckError`), named for what happened."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from evalduck.errors import EvalduckError  # the family's base, shared with evalduck.flows


class ConfigError(EvalduckError, ValueError):
    """Bad options at creation, e.g. "`uncertainty_weight` must be between 0 and 1, got 1.5"."""


class ScorerInputError(EvalduckError, ValueError):
    """A run the scorer cannot score: missing output, non-string message content, ..."""


class NotScorable(ScorerInputError):
    """This run lacks what the scorer needs (no context, no ground truth, no tool expectations, no system
    prompt): raised by the scorer's first step, before any judge request, with a message naming the missing
    field and where to give it. Never retried; an orchestrator stores the cell as skipped with the message as
    its reason (SCORERS.md 0.3), like Mastra's ``notScorable``."""


class StepResultError(EvalduckError, TypeError):
    """A step returned something that is not JSON-serialisable (or not a number for generate_score)."""


class JudgeErrorKind(StrEnum):
    """What happened to a judge request, as stored and shown; the class of the error says what to do."""

    # JudgeConfigError: every request with these settings fails the same way.
    CONNECTION_REFUSED = "connection_refused"  # nothing listens at api_base
    DNS = "dns"  # the api_base host does not resolve
    BAD_URL = "bad_url"  # api_base is not a usable http(s) URL
    NO_API_KEY = "no_api_key"  # the client had no key to send
    UNKNOWN_PROVIDER = "unknown_provider"  # litellm cannot tell the provider from the model string
    AUTH = "auth"  # HTTP 401
    FORBIDDEN = "forbidden"  # HTTP 403
    MODEL_NOT_FOUND = "model_not_found"  # HTTP 404: the model, or the endpoint under api_base
    # JudgeTransientError: worth retrying.
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"  # HTTP 429
    SERVER_ERROR = "server_error"  # HTTP 5xx, 408, 409
    CONNECTION_CLOSED = "connection_closed"  # the connection broke before the whole answer arrived
    INVALID_RESPONSE = "invalid_response"  # an HTTP body that is not a chat completion (e.g. truncated JSON)
    CONNECTION_ERROR = "connection_error"  # another network failure
    INVALID_ANSWER = "invalid_answer"  # the answer failed validation, twice (InvalidJudgeAnswer)
    # JudgeRequestError: this request was refused; others may succeed.
    BAD_REQUEST = "bad_request"  # HTTP 400, 422 and other 4xx
    UNKNOWN = "unknown"


class JudgeError(EvalduckError):
    """A judge (LLM) call failed. ``kind`` says what happened; ``status`` is the HTTP status the server
    sent, None when no HTTP answer came (refused connection, bad URL, timeout, broken body)."""

    default_kind = JudgeErrorKind.UNKNOWN

    def __init__(self, message: str, *, kind: JudgeErrorKind | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind or self.default_kind
        self.status = status


class JudgeTransientError(JudgeError):
    """Worth retrying: 429, 5xx, timeouts, broken connections and bodies, invalid answers.

    ``retry_after`` is the server's Retry-After in seconds, when it sent one.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        kind: JudgeErrorKind | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message, kind=kind, status=status)
        self.retry_after = retry_after


class JudgeConfigError(JudgeError):
    """A configuration error: every request with these settings fails the same way (key rejected or
    missing, model not found, nothing listening at api_base, a bad URL, an unknown provider). Never
    retried; an orchestrator can stop a run at the first one instead of failing every cell."""


class JudgeRequestError(JudgeError):
    """This request was refused (HTTP 400, 422, ...): retrying it would not help, but other requests with
    the same settings may succeed (e.g. one item too long for the model's context)."""

    default_kind = JudgeErrorKind.BAD_REQUEST


class InvalidJudgeAnswer(JudgeTransientError):
    """The judge's answer failed validation, and so did its answer to the one repair request."""

    default_kind = JudgeErrorKind.INVALID_ANSWER


def error_rule(error: Mapping[str, Any]) -> str:
    """One pydantic error's message as a rule to write after a name: "Value error, " dropped, the first
    letter lower-cased ("input should be greater than 0"). ``describe_validation`` and the CLI's
    option-named errors (``flows/cli/errors.py``) both build on it."""
    msg = str(error.get("msg") or "is not valid").removeprefix("Value error, ")
    return msg[:1].lower() + msg[1:]


def did_you_mean(value: str, choices: Sequence[str] | Mapping[str, str], cutoff: float = 0.6) -> str | None:
    """"did you mean 'tone-scorer'?" for the choice closest to a mistyped ``value`` (difflib's
    ``get_close_matches``; ``cutoff`` its similarity threshold), or None when none is close. A mapping's keys
    are matched and its values suggested (e.g. short names for ids)."""
    names = choices if isinstance(choices, Mapping) else {c: c for c in choices}
    close = difflib.get_close_matches(value, list(names), n=1, cutoff=cutoff)
    return f"did you mean {names[close[0]]!r}?" if close else None


def error_hint(error: Mapping[str, Any]) -> str:
    """What a validator put in its error's ``hint`` (``PydanticCustomError(..., {"hint": ...})``), as a
    suffix for after the value ("; did you mean 'x'?"); "" when there is none."""
    hint = (error.get("ctx") or {}).get("hint")
    return f"; {hint}" if hint else ""


def describe_validation(exc: ValidationError, noun: str = "option", *, known: Sequence[str] = ()) -> str:
    """The pydantic errors as "`name` must ..., got value" parts joined by "; ".

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
            parts.append(f"`{name}` {rule}, got {err.get('input')!r:.80}{error_hint(err)}")
    return "; ".join(parts)
