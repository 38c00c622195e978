"""Asking an LLM judge: its settings, the prompt with structured output, one repair request on an invalid
answer, and the parsed answer. Each request goes through a ``JudgeTransport`` (``evalduck.scorers._transport``),
litellm in this process unless the caller passes another.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalduck.scorers._cache_key import without_excluded
from evalduck.scorers._errors import ConfigError, InvalidJudgeAnswer, describe_validation
from evalduck.scorers._redact import public_extra, redact
from evalduck.scorers._result import JudgeUsage
from evalduck.scorers._transport import JudgeTransport, default_transport

__all__ = (
    "JUDGE_MODEL_ENV",
    "JudgeSettings",
    "ask_judge",
    "output_schema",
)

JUDGE_MODEL_ENV = "EVALDUCK_JUDGE_MODEL"
_RESERVED = frozenset({"model", "messages", "response_format", "stream", "n"})
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
    seed: int | None = Field(
        default=None, ge=0, description="Generation seed, sent where the provider takes one (litellm's supported "
        "params); repeated judging (a run's judge_samples) sets sample i's to this plus i.",
    )
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
        fields = {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "extra": without_excluded(self.extra),
        }
        if self.seed is not None:  # only when set: keys made before the field existed stay the same
            fields["seed"] = self.seed
        return fields

    def sampled(self, sample: int) -> JudgeSettings:
        """The settings of repeated judging's sample ``sample``: sample 0 is these settings unchanged (so one
        sample asks and keys exactly as a run without repeats), sample i > 0 has the seed ``seed + i``, so
        its requests and cache key are its own."""
        if sample == 0:
            return self
        return self.model_copy(update={"seed": (self.seed or 0) + sample})

    def public_dict(self) -> dict[str, Any]:
        """JSON-able settings without secrets, for storing with a run's configuration."""
        return {**self.model_dump(exclude={"extra"}), "extra": public_extra(self.extra)}


@functools.lru_cache(maxsize=256)
def output_schema(output_model: type[BaseModel]) -> dict[str, Any]:
    """The output model's JSON schema, built once per model (pydantic rebuilds it on every call, and every
    judge request and cache key needs it). Read-only: copy before handing it to code that may change it."""
    return output_model.model_json_schema()


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


async def ask_judge(
    settings: JudgeSettings,
    *,
    label: str,
    system: str,
    prompt: str,
    output_model: type[BaseModel] | None = None,
    check: Callable[[Any], None] | None = None,
    transport: JudgeTransport | None = None,
) -> tuple[Any, list[JudgeUsage]]:
    """Ask once; on an invalid answer ask once more showing the error; then raise InvalidJudgeAnswer.

    Both requests go through ``transport`` (default: litellm in this process). Returns the answer as JSON
    data (the output model dumped, or the stripped text) and the usage records.
    """
    send = default_transport(transport).request
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    response_format = None
    if output_model is not None:
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": output_model.__name__, "schema": copy.deepcopy(output_schema(output_model))},
        }
    content, usage = await send(settings, messages, response_format, label, False)
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
    content, repair_usage = await send(settings, repair_messages, response_format, label, True)
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
