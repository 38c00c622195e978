"""Where a judge request goes: the ``JudgeTransport`` protocol (a request in, the answer's text and a usage
record out) and its default, ``LiteLLMTransport`` (litellm ``acompletion`` in this process), with the error
classification, Retry-After, cost and redaction it needs.

litellm is imported lazily (it is slow to import and must see LITELLM_LOCAL_MODEL_COST_MAP first), and
its own retries and the OpenAI SDK's are switched off: every request a server sees is one we chose to send.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from scorers._errors import JudgeConfigError, JudgeTransientError
from scorers._result import JudgeUsage

if TYPE_CHECKING:
    from scorers._judge import JudgeSettings

__all__ = (
    "RETRY_AFTER_CAP_S",
    "JudgeTransport",
    "LiteLLMTransport",
    "complete",
    "default_transport",
    "public_extra",
    "redact",
)

RETRY_AFTER_CAP_S = 60.0
_SECRET_NAME = re.compile(r"(key|token|secret|password)", re.IGNORECASE)
_KEY_LIKE = re.compile(r"\b(sk|pk|rk|key)-[A-Za-z0-9_\-]{6,}")


@runtime_checkable
class JudgeTransport(Protocol):
    """Sends one judge (or model) request and returns the answer's text and its usage record.

    An implementation must behave as ``LiteLLMTransport`` does: the same answers, and failures raised as
    ``JudgeTransientError`` (worth retrying; ``retry_after`` seconds when the server said) or
    ``JudgeConfigError`` (never retried). It makes one attempt: retries are the caller's.
    """

    async def request(
        self,
        settings: JudgeSettings,
        messages: list[dict[str, str]],
        response_format: Any,
        label: str,
        repair: bool,
    ) -> tuple[str | None, JudgeUsage]:
        """One request.

        Args:
            settings: the judge (model, generation settings, api_base, timeout, extra litellm keywords).
            messages: the chat messages to send.
            response_format: litellm's ``response_format`` (a JSON schema), or None for plain text.
            label: ``<scorer id>.<step>`` (or ``target <label>``), for error messages.
            repair: True for the one repair request after an invalid answer (recorded in the usage).
        """
        ...


def public_extra(extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` with the values of secret-looking names (key, token, secret, password) masked."""
    return {k: ("***" if _SECRET_NAME.search(k) else v) for k, v in extra.items()}


def _secrets(settings: JudgeSettings) -> list[str]:
    found = [str(v) for k, v in settings.extra.items() if _SECRET_NAME.search(k) and v]
    found += [v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8]
    return sorted(set(found), key=len, reverse=True)


def redact(text: str, settings: JudgeSettings) -> str:
    """Remove every API key we know of (settings, environment) and anything shaped like one."""
    for secret in _secrets(settings):
        text = text.replace(secret, "***")
    return _KEY_LIKE.sub(lambda m: f"{m.group(1)}-***", text)


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


def _classify(exc: BaseException, settings: JudgeSettings, label: str) -> Exception:
    """Map a litellm/openai/asyncio exception to JudgeTransientError or JudgeConfigError."""
    import litellm

    status = getattr(exc, "status_code", None)
    detail = redact(f"{type(exc).__name__}: {exc}", settings)[:600]
    where = f"{label}: judge {settings.model!r}"
    if isinstance(exc, (asyncio.TimeoutError, litellm.Timeout)):
        return JudgeTransientError(f"{where} timed out after {settings.timeout}s ({detail})")
    if isinstance(exc, litellm.RateLimitError):
        return JudgeTransientError(f"{where} was rate limited (429): {detail}", retry_after=_retry_after(exc))
    if any(marker in str(exc) for marker in _MISSING_KEY_MARKERS):
        # The OpenAI SDK refuses before sending anything; litellm reports it as a 500, which would be retried.
        return JudgeConfigError(
            f"{where} has no API key; not retried: set the provider's key (e.g. OPENAI_API_KEY; any value for a "
            f"local OpenAI-compatible server that needs none) ({detail})"
        )
    transient = (
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    )
    if isinstance(exc, transient) or (isinstance(status, int) and (status >= 500 or status in (408, 409))):
        return JudgeTransientError(f"{where} failed (status {status}): {detail}", retry_after=_retry_after(exc))
    return JudgeConfigError(f"{where} refused the request (status {status}); not retried: {detail}")


def _response_cost(response: Any) -> float | None:
    """The request's cost: litellm has already priced the response into its hidden params (with the same
    ``completion_cost``); pricing it again only where it has not. None when the model's price is unknown."""
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, Mapping) and "response_cost" in hidden:  # None: litellm found no price for it
        cost = hidden["response_cost"]
        return float(cost) if cost is not None else None
    import litellm

    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # noqa: BLE001 - unknown price: cost stays unknown
        return None


class LiteLLMTransport:
    """The default transport: one ``litellm.acompletion`` in this process, failures classified (transient
    or config). It holds no state, so one instance serves any number of runs and event loops."""

    def __repr__(self) -> str:
        return "LiteLLMTransport()"

    async def request(
        self, settings: JudgeSettings, messages: list[dict[str, str]], response_format: Any, label: str, repair: bool
    ) -> tuple[str | None, JudgeUsage]:
        """One request through litellm in this process (see ``JudgeTransport.request``)."""
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout
        kwargs: dict[str, Any] = {
            **settings.extra,
            "model": settings.model,
            "messages": messages,
            "temperature": settings.temperature,
            "timeout": settings.timeout,
            "num_retries": 0,
            "max_retries": 0,
        }
        if settings.api_base:
            kwargs["api_base"] = settings.api_base
        if settings.max_tokens:
            kwargs["max_tokens"] = settings.max_tokens
        if response_format is not None:
            kwargs["response_format"] = response_format
        started = time.perf_counter()
        try:
            # A backstop in case a provider path ignores `timeout`.
            response = await asyncio.wait_for(litellm.acompletion(**kwargs), timeout=settings.timeout + 5)
        except Exception as exc:  # noqa: BLE001 - every failure is classified, none is swallowed
            raise _classify(exc, settings, label) from None
        latency = time.perf_counter() - started
        usage = getattr(response, "usage", None)
        record = JudgeUsage(
            model=settings.model,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            cost=_response_cost(response),
            latency_s=round(latency, 6),
            repair=repair,
        )
        choices = getattr(response, "choices", None) or [None]
        content = getattr(getattr(choices[0], "message", None), "content", None)
        return content, record


_DEFAULT = LiteLLMTransport()


def default_transport(transport: JudgeTransport | None) -> JudgeTransport:
    """``transport``, or litellm in this process when None."""
    return _DEFAULT if transport is None else transport


async def complete(
    settings: JudgeSettings,
    messages: list[dict[str, str]],
    *,
    label: str,
    transport: JudgeTransport | None = None,
) -> tuple[str | None, JudgeUsage]:
    """One plain chat completion on the judge's path (same error classes, no retries, no repair), e.g. for
    calling a model as an eval target. ``transport`` defaults to litellm in this process."""
    return await default_transport(transport).request(settings, messages, None, label, False)
