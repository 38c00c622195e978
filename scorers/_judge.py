"""The one path to an LLM judge: litellm ``acompletion`` with structured output, one repair request on an
invalid answer, errors sorted into transient (retry) and config (don't), and a usage record per request.

litellm is imported lazily (it is slow to import and must see LITELLM_LOCAL_MODEL_COST_MAP first), and
its own retries and the OpenAI SDK's are switched off: every request a server sees is one we chose to send.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import functools
import json
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from scorers._cache_key import without_excluded
from scorers._errors import (
    ConfigError,
    InvalidJudgeAnswer,
    JudgeConfigError,
    JudgeTransientError,
    describe_validation,
)
from scorers._result import JudgeUsage

__all__ = (
    "JUDGE_MODEL_ENV",
    "JudgeSettings",
    "RequestFn",
    "ask_judge",
    "complete",
    "judge_requests_via",
    "output_schema",
    "redact",
    "request_here",
)

JUDGE_MODEL_ENV = "EVALDUCK_JUDGE_MODEL"
RETRY_AFTER_CAP_S = 60.0
_RESERVED = frozenset({"model", "messages", "response_format", "stream", "n"})
_SECRET_NAME = re.compile(r"(key|token|secret|password)", re.IGNORECASE)
_KEY_LIKE = re.compile(r"\b(sk|pk|rk|key)-[A-Za-z0-9_\-]{6,}")
_MAX_BAD_ANSWER_CHARS = 4000


class JudgeSettings(BaseModel):
    """How to call the judge. ``model`` is a litellm model string with its provider prefix.

    Keys come from the provider's usual environment variables (e.g. OPENAI_API_KEY); ``extra`` holds any
    other litellm keyword (``api_key`` included, which is never stored, logged or keyed).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1, description="litellm model string, e.g. 'openai/gpt-4o-mini'.")
    temperature: float = Field(default=0.0, ge=0, le=2)
    timeout: float = Field(default=60.0, gt=0, description="Seconds per request.")
    api_base: str | None = Field(default=None, description="e.g. a local OpenAI-compatible server's /v1 URL.")
    max_tokens: int | None = Field(default=None, gt=0)
    retries: int = Field(default=3, ge=0, le=20, description="Standalone run: retries of transient errors.")
    extra: dict[str, Any] = Field(default_factory=dict, description="More litellm.acompletion keywords.")

    @field_validator("extra")
    @classmethod
    def _no_reserved(cls, value: dict[str, Any]) -> dict[str, Any]:
        clash = sorted(_RESERVED & value.keys())
        if clash:
            raise ValueError(f"`extra` must not set {', '.join(clash)}: the judge sets them itself")
        return value

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            yield name, (public_extra(value) if name == "extra" else value)

    @classmethod
    def resolve(cls, judge: "JudgeSettings | Mapping[str, Any] | str | None" = None, **overrides: Any) -> "JudgeSettings":
        """Merge partial settings with the defaults; the model falls back to $EVALDUCK_JUDGE_MODEL.

        Raises:
            ConfigError: no model anywhere, or an invalid setting.
        """
        if isinstance(judge, JudgeSettings):  # what it left at the defaults stays unset (see model_fields_set)
            data: dict[str, Any] = judge.model_dump(exclude_unset=True)
        elif isinstance(judge, str):
            data = {"model": judge}
        else:
            data = dict(judge or {})
        data.update({k: v for k, v in overrides.items() if v is not None})
        if not data.get("model"):
            env_model = os.environ.get(JUDGE_MODEL_ENV, "").strip()
            if not env_model:
                raise ConfigError(
                    f"no judge model: pass `model=` or set {JUDGE_MODEL_ENV} (e.g. 'openai/gpt-4o-mini', with "
                    "the provider's key such as OPENAI_API_KEY in the environment, or 'openai/<name>' plus "
                    "OPENAI_API_BASE for a local OpenAI-compatible server)"
                )
            data["model"] = env_model
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(describe_validation(exc)) from None

    def key_fields(self) -> dict[str, Any]:
        """What can change an answer: the model and generation settings (see _cache_key exclusions)."""
        return {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "extra": without_excluded(self.extra),
        }

    def public_dict(self) -> dict[str, Any]:
        """JSON-able settings without secrets, for storing with a run's configuration."""
        return {**self.model_dump(exclude={"extra"}), "extra": public_extra(self.extra)}


def public_extra(extra: Mapping[str, Any]) -> dict[str, Any]:
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


@functools.lru_cache(maxsize=256)
def output_schema(output_model: type[BaseModel]) -> dict[str, Any]:
    """The output model's JSON schema, built once per model (pydantic rebuilds it on every call, and every
    judge request and cache key needs it). Read-only: copy before handing it to code that may change it."""
    return output_model.model_json_schema()


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


def _parse(content: str | None, output_model: type[BaseModel] | None, check: Callable[[Any], None] | None) -> Any:
    """The validated answer as JSON data; ValueError says what was wrong."""
    if content is None or not content.strip():
        raise ValueError("the answer was empty")
    if output_model is None:
        return content.strip()
    text = content.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc})") from None
    try:
        parsed = output_model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"the answer does not match the schema: {describe_validation(exc)}") from None
    if check is not None:
        check(parsed)
    return parsed.model_dump(mode="json")


RequestFn = Callable[
    [JudgeSettings, list[dict[str, str]], Any, str, bool], Awaitable[tuple[str | None, JudgeUsage]]
]
# Where judge requests go: None = litellm in this process (`request_here`). An orchestrator may send them
# elsewhere for a while (the flows run them in a child process), with `judge_requests_via`.
_REQUEST_VIA: contextvars.ContextVar[RequestFn | None] = contextvars.ContextVar("evalduck_judge_via", default=None)


@contextlib.contextmanager
def judge_requests_via(fn: RequestFn | None) -> Iterator[None]:
    """Within the block (and tasks started from it), judge and model requests go through ``fn``, which
    must behave as ``request_here`` (same answers, same error classes)."""
    token = _REQUEST_VIA.set(fn)
    try:
        yield
    finally:
        _REQUEST_VIA.reset(token)


async def _one_request(settings: JudgeSettings, messages: list[dict[str, str]], response_format: Any, label: str, repair: bool) -> tuple[str | None, JudgeUsage]:
    via = _REQUEST_VIA.get()
    if via is not None:
        return await via(settings, messages, response_format, label, repair)
    return await request_here(settings, messages, response_format, label, repair)


async def request_here(settings: JudgeSettings, messages: list[dict[str, str]], response_format: Any, label: str, repair: bool) -> tuple[str | None, JudgeUsage]:
    """One request through litellm in this process; failures classified (transient or config)."""
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


async def complete(settings: JudgeSettings, messages: list[dict[str, str]], *, label: str) -> tuple[str | None, JudgeUsage]:
    """One plain chat completion on the judge's path (same error classes, no retries, no repair),
    e.g. for calling a model as an eval target."""
    return await _one_request(settings, messages, None, label, repair=False)


async def ask_judge(
    settings: JudgeSettings,
    *,
    label: str,
    system: str,
    prompt: str,
    output_model: type[BaseModel] | None = None,
    check: Callable[[Any], None] | None = None,
) -> tuple[Any, list[JudgeUsage]]:
    """Ask once; on an invalid answer ask once more showing the error; then raise InvalidJudgeAnswer.

    Returns the answer as JSON data (the output model dumped, or the stripped text) and the usage records.
    """
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    response_format = None
    if output_model is not None:
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": output_model.__name__, "schema": copy.deepcopy(output_schema(output_model))},
        }
    content, usage = await _one_request(settings, messages, response_format, label, repair=False)
    try:
        return _parse(content, output_model, check), [usage]
    except ValueError as exc:
        problem = str(exc)
    shape = "only a JSON object that matches the schema" if output_model else "a non-empty plain-text answer"
    repair_messages = [
        *messages,
        {"role": "assistant", "content": (content or "")[:_MAX_BAD_ANSWER_CHARS]},
        {"role": "user", "content": f"Your answer was invalid: {problem}. Answer again, with {shape}."},
    ]
    content, repair_usage = await _one_request(settings, repair_messages, response_format, label, repair=True)
    try:
        return _parse(content, output_model, check), [usage, repair_usage]
    except ValueError as exc:
        raise InvalidJudgeAnswer(
            redact(
                f"{label}: judge {settings.model!r} gave an invalid answer, and again after one repair "
                f"request: {exc} (first problem: {problem})",
                settings,
            )
        ) from None
