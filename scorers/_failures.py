"""What a failed judge request says: a litellm, OpenAI SDK or HTTP-client exception turned into the
``JudgeError`` that names what happened and what to do (``_classify``), read from its cause chain (refused
connection, DNS, bad URL, timeout, broken body, HTTP status with the provider's message) and its
Retry-After.

Apart from the transport (_transport.py), which only sends: this is the part that follows the libraries'
exception classes and words, matched by name so that none of the HTTP clients is imported here.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from evalduck.scorers._errors import (
    JudgeConfigError,
    JudgeError,
    JudgeErrorKind,
    JudgeRequestError,
    JudgeTransientError,
)
from evalduck.scorers._redact import redact, redact_url

if TYPE_CHECKING:
    from evalduck.scorers._judge import JudgeSettings

__all__ = ("RETRY_AFTER_CAP_S", "classify", "url_problem")

RETRY_AFTER_CAP_S = 60.0


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return min(RETRY_AFTER_CAP_S, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            seconds = float(value)
        except ValueError:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        return min(RETRY_AFTER_CAP_S, max(0.0, seconds))
    except (TypeError, ValueError, AttributeError):
        return None


# What the OpenAI SDK says (wrapped by litellm as a 500) when it has no key to send.
_MISSING_KEY_MARKERS = ("Missing credentials", "api_key client option must be set")
_NO_PROVIDER_MARKER = "LLM Provider NOT provided"
# Exception class names (anywhere in an exception's MRO) of the HTTP clients under litellm (aiohttp,
# httpx, the OpenAI SDK), matched by name so that none of them is imported here and versions can move.
_BAD_URL_TYPES = frozenset({"InvalidURL", "InvalidUrlClientError", "NonHttpUrlClientError", "UnsupportedProtocol"})
_CLOSED_TYPES = frozenset({
    "ClientPayloadError", "ContentLengthError", "ServerDisconnectedError", "RemoteProtocolError", "ReadError",
    "IncompleteRead",
})
_LITELLM_PREFIX = re.compile(r"^(litellm\.\w+: )?(\w+Error: )?(\w+Exception - )?(Error code: \d+ - )?")
_FIX_KEY = "check the API key (e.g. OPENAI_API_KEY, or `api_key` in the scorer's extra)"
_FIX_BASE = "start the judge server, or fix the api_base (--judge-api-base)"


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes, outermost first (litellm wraps the OpenAI SDK, which wraps the HTTP client);
    a StopIteration left as context by a JSON decoder is not one of them."""
    found: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in found and len(found) < 20 and not isinstance(link, StopIteration):
        found.append(link)
        link = link.__cause__ or link.__context__
    return found


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an OpenAI-style api_base, or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port out of range or not a number
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return f"the scheme is {parts.scheme!r}, not http or https" if parts.scheme else "it has no http:// or https://"
    if not parts.hostname:
        return "it has no host"
    if parts.username is not None or parts.password is not None:
        return "it holds credentials (user:key@), which the client will not send with its own key header"
    return None


def _provider_message(exc: BaseException) -> str:
    """The provider's own error message: ``{"error": {"message": ...}}`` from the SDK's parsed body or the
    HTTP response, else the exception's text without litellm's class-name prefixes."""
    body = getattr(exc, "body", None)
    if body is None and getattr(exc, "response", None) is not None:
        try:
            body = json.loads(exc.response.text)  # type: ignore[attr-defined]
        except (ValueError, TypeError, AttributeError):
            body = None
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, Mapping) else inner
        if message:
            return str(message)
    if isinstance(body, str) and body.strip():
        return body.strip()
    return _LITELLM_PREFIX.sub("", str(exc)) or type(exc).__name__


def _http_status(chain: list[BaseException]) -> tuple[int | None, str]:
    """The status of the HTTP answer the server sent, and the provider's message; (None, "") when no HTTP
    answer came. litellm's own exceptions carry a status even then (500 for a refused connection or a body
    that is not JSON), so the HTTP client's or the OpenAI SDK's status is believed first, and litellm's
    only when no network or decoding failure lies under it."""
    for link in chain:
        response = getattr(link, "response", None)
        real = "HTTPStatusError" in _names(link) or (
            "APIStatusError" in _names(link) and not type(link).__module__.startswith("litellm")
        )
        status = getattr(link, "status_code", None) or getattr(response, "status_code", None)
        if real and isinstance(status, int):
            return status, _provider_message(link)
    status = getattr(chain[0], "status_code", None)
    no_answer = _provider_message(chain[0]).startswith("Connection error") or any(  # the SDK's words
        isinstance(link, (OSError, ValueError)) or _names(link) & {"APIConnectionError", "APITimeoutError"}
        for link in chain[1:]
    )
    if isinstance(status, int) and not no_answer:
        return status, _provider_message(chain[0])
    return None, ""


def _broken_body(chain: list[BaseException]) -> str:
    """How the connection broke, from the HTTP client's words."""
    text = " ".join(str(link) for link in chain)
    got = re.search(r"received (\d+) of (\d+) bytes", text)
    if got:
        return f"got {got.group(1)} of the {got.group(2)} bytes the server announced"
    return next((str(link) for link in chain if _names(link) & _CLOSED_TYPES), str(chain[-1])) or "no reason given"


class _Failure:
    """One failed request being described: the words every message shares, and its two ends."""

    def __init__(self, exc: BaseException, settings: JudgeSettings, label: str) -> None:
        self.exc, self.settings = exc, settings
        self.chain = _chain(exc)
        self.where = f"{label}: judge {settings.model!r}"
        self.base = redact_url(settings.api_base) if settings.api_base else "the provider's default URL"

    def has(self, *types: type[BaseException], names: frozenset[str] | set[str] = frozenset()) -> bool:
        """Whether any link of the cause chain is one of ``types`` or has a class named in ``names``."""
        return any(isinstance(link, types) or bool(_names(link) & names) for link in self.chain)

    def clip(self, text: str, limit: int = 300) -> str:
        return redact(text, self.settings)[:limit]

    def config(self, kind: JudgeErrorKind, what: str, fix: str, status: int | None = None) -> JudgeConfigError:
        return JudgeConfigError(f"{self.where} {what}; not retried: {fix}", kind=kind, status=status)

    def transient(self, kind: JudgeErrorKind, what: str, status: int | None = None) -> JudgeTransientError:
        return JudgeTransientError(f"{self.where} {what}", kind=kind, status=status, retry_after=_retry_after(self.exc))


def classify(exc: BaseException, settings: JudgeSettings, label: str) -> JudgeError:
    """Map a litellm/openai/HTTP-client exception to an error that says what happened and what to do:
    JudgeConfigError (every request would fail so), JudgeTransientError (retry) or JudgeRequestError."""
    import litellm

    f = _Failure(exc, settings, label)
    if isinstance(exc, (asyncio.TimeoutError, litellm.Timeout)):
        return f.transient(JudgeErrorKind.TIMEOUT, f"timed out after {settings.timeout}s (no answer from {f.base})")
    if any(marker in str(exc) for marker in _MISSING_KEY_MARKERS):
        # The OpenAI SDK refuses before sending anything; litellm reports it as a 500, which would be retried.
        return f.config(JudgeErrorKind.NO_API_KEY, "has no API key, so nothing was sent",
                        "set the provider's key (e.g. OPENAI_API_KEY; any value for a local OpenAI-compatible "
                        "server that needs none)")
    if _NO_PROVIDER_MARKER in str(exc):
        return f.config(JudgeErrorKind.UNKNOWN_PROVIDER, "names no provider litellm knows, so nothing was sent",
                        "write the model as '<provider>/<model>', e.g. 'openai/gpt-4o-mini' (or 'openai/<name>' "
                        "with an api_base for a local OpenAI-compatible server)")
    status, said = _http_status(f.chain)
    return _no_http_answer(f) if status is None else _http_error(f, status, f.clip(said))


def _no_http_answer(f: _Failure) -> JudgeError:
    """A failure before any HTTP status arrived: a bad URL, nothing listening, no such host, a connection
    or body that broke off, a body that is not JSON."""
    import litellm

    innermost = f.chain[-1]
    problem = url_problem(f.settings.api_base) if f.settings.api_base else None
    if problem is not None or f.has(names=_BAD_URL_TYPES):
        why = problem or f.clip(str(innermost))
        return f.config(JudgeErrorKind.BAD_URL, f"cannot use the api_base {f.base!r} ({why})",
                        "give an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1")
    if f.has(ConnectionRefusedError):
        return f.config(JudgeErrorKind.CONNECTION_REFUSED,
                        f"could not connect to {f.base}: connection refused (nothing is listening there)", _FIX_BASE)
    dns = next((link for link in f.chain if isinstance(link, socket.gaierror)), None)
    if dns is not None:
        host = urlsplit(f.settings.api_base or "").hostname or "the provider's host"
        if dns.errno == socket.EAI_AGAIN:
            return f.transient(JudgeErrorKind.DNS, f"could not resolve {host!r} for now ({dns.strerror})")
        return f.config(JudgeErrorKind.DNS, f"could not resolve the host {host!r} of {f.base} ({dns.strerror})",
                        "check the host name in the api_base (--judge-api-base)")
    if f.has(ConnectionResetError, BrokenPipeError, names=_CLOSED_TYPES):
        return f.transient(JudgeErrorKind.CONNECTION_CLOSED,
                           "lost the connection before the whole answer arrived "
                           f"({f.clip(_broken_body(f.chain), 200)})")
    if f.has(json.JSONDecodeError):
        return f.transient(JudgeErrorKind.INVALID_RESPONSE, "answered with an HTTP body that is not a chat "
                           f"completion (not valid JSON: {f.clip(str(innermost), 120)})")
    if f.has(OSError, names={"APIConnectionError"}):
        return f.transient(JudgeErrorKind.CONNECTION_ERROR, f"could not reach {f.base} ({f.clip(str(innermost), 200)})")
    detail = f.clip(f"{type(f.exc).__name__}: {f.exc}", 600)
    if isinstance(f.exc, (litellm.APIConnectionError, litellm.InternalServerError)):
        return f.transient(JudgeErrorKind.UNKNOWN, f"failed with no HTTP answer: {detail}")
    return JudgeRequestError(f"{f.where} failed with no HTTP answer; not retried: {detail}",
                             kind=JudgeErrorKind.UNKNOWN)


def _http_error(f: _Failure, status: int, said: str) -> JudgeError:
    """An HTTP error status, with the provider's own message."""
    if status == 401:
        return f.config(JudgeErrorKind.AUTH, f"rejected the credentials (HTTP 401): {said}", _FIX_KEY, status)
    if status == 403:
        return f.config(JudgeErrorKind.FORBIDDEN, f"denied access (HTTP 403): {said}",
                        "check that the key may use this model", status)
    if status == 404:
        return f.config(JudgeErrorKind.MODEL_NOT_FOUND, f"found no such model or endpoint (HTTP 404): {said}",
                        f"check the model name ({f.settings.model!r}) and that the api_base ({f.base}) is the URL "
                        "that /chat/completions is under, e.g. ending in /v1", status)
    if status == 429:
        return f.transient(JudgeErrorKind.RATE_LIMITED, f"was rate limited (HTTP 429): {said}", status)
    if status >= 500 or status in (408, 409):
        return f.transient(JudgeErrorKind.SERVER_ERROR, f"failed with HTTP {status}: {said}", status)
    return JudgeRequestError(f"{f.where} refused the request (HTTP {status}); not retried: {said}",
                             kind=JudgeErrorKind.BAD_REQUEST, status=status)
