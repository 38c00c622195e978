"""Where a judge request goes: the ``JudgeTransport`` protocol (a request in, the answer's text and a usage
record out) and its default, ``LiteLLMTransport`` (litellm ``acompletion`` in this process), with its cost;
what a failure says is _failures.py's, the masking of secrets _redact.py's.

litellm is imported lazily (it is slow to import and must see LITELLM_LOCAL_MODEL_COST_MAP first), and
its own retries and the OpenAI SDK's are switched off: every request a server sees is one we chose to send.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from evalduck.scorers._errors import JudgeError
from evalduck.scorers._failures import classify
from evalduck.scorers._result import JudgeUsage

if TYPE_CHECKING:
    from evalduck.scorers._judge import JudgeSettings

__all__ = ("JudgeTransport", "LiteLLMTransport", "complete", "default_transport")


@runtime_checkable
class JudgeTransport(Protocol):
    """Sends one judge (or model) request and returns the answer's text and its usage record.

    An implementation must behave as ``LiteLLMTransport`` does: the same answers, and failures raised as
    ``JudgeTransientError`` (worth retrying; ``retry_after`` seconds when the server said),
    ``JudgeConfigError`` (a configuration error: every request fails so; never retried) or
    ``JudgeRequestError`` (this request refused; not retried), each with its ``kind`` and ``status``, and
    able to cross a process boundary by pickle. It makes one attempt: retries are the caller's.
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
        if settings.seed is not None and takes_seed(settings.model):
            kwargs["seed"] = settings.seed
        started = time.perf_counter()
        failure: JudgeError | None = None
        try:
            # A backstop in case a provider path ignores `timeout`.
            response = await asyncio.wait_for(litellm.acompletion(**kwargs), timeout=settings.timeout + 5)
        except Exception as exc:  # noqa: BLE001 - every failure is classified, none is swallowed
            failure = classify(exc, settings, label)
        if failure is not None:
            # Raised outside the handler, so litellm's exception is not its __context__: with tblib's pickling
            # installed (distributed does it for every exception class defined when it is imported), the
            # context is pickled too, and litellm's exceptions cannot be unpickled.
            raise failure
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


@functools.lru_cache(maxsize=64)
def takes_seed(model: str) -> bool:
    """Whether litellm sends a ``seed`` to this model's provider (OpenAI and most compatible servers do;
    Anthropic, for one, does not, and a seed there would be refused). Unknown providers: no seed."""
    import litellm

    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
        params = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
    except Exception:  # noqa: BLE001 - a model litellm cannot place gets no seed; the request itself says why
        return False
    return bool(params) and "seed" in params


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
