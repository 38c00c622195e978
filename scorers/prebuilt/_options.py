"""Option parsing shared by the prebuilt factories: partial options merge with defaults, camelCase
(Mastra) names are accepted, and anything invalid is a ConfigError (a ValueError) at creation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from evalduck.scorers._errors import ConfigError, describe_validation
from evalduck.scorers._judge import JudgeSettings

__all__ = ("OptionsModel", "NoOptions", "ScaleOptions", "JudgeOptions", "parse_options")

OptionsT = TypeVar("OptionsT", bound="OptionsModel")


class OptionsModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, alias_generator=to_camel)


class NoOptions(OptionsModel):
    """A scorer without options: any name is unknown."""


class ScaleOptions(OptionsModel):
    """Options of a scorer whose score runs from 0 to ``scale``."""

    scale: float = 1.0

    @field_validator("scale")
    @classmethod
    def _scale(cls, value: float) -> float:
        if not value > 0 or value == float("inf"):
            raise ValueError(f"`scale` must be a finite number greater than 0, got {value!r}")
        return value


class JudgeOptions(OptionsModel):
    """A judge scorer's judge: a whole ``judge`` (``JudgeSettings`` or a mapping of its fields; not a model
    string), and single settings that override it."""

    model: str | None = None
    temperature: float | None = None
    timeout: float | None = None
    api_base: str | None = None
    max_tokens: int | None = None
    retries: int | None = None
    extra: dict[str, Any] | None = None
    judge: JudgeSettings | None = None

    def judge_settings(self) -> JudgeSettings:
        """The judge these options describe (the model defaults to $EVALDUCK_JUDGE_MODEL)."""
        overrides = self.model_dump(include=set(JudgeOptions.model_fields) - {"judge"})
        return JudgeSettings.resolve(self.judge, **overrides)


def parse_options(model: type[OptionsT], options: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> OptionsT:
    """Merge an options mapping and keyword arguments (keywords win) over the model's defaults."""
    if options is not None and not isinstance(options, Mapping):
        raise ConfigError(f"options must be a mapping, got {type(options).__name__}")
    data = {**(options or {}), **kwargs}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation(exc)) from None
