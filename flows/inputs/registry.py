"""Scorer specs (as written in configs, the CLI and the UI form) -> scorers: a prebuilt id builds with
evalduck.scorers.PREBUILT's factory, an import path (`mypkg.evals:strict_tone`) with evalduck.scorers.load_scorer; options
either way.

A judge scorer with no judge model anywhere (a prebuilt one, or a factory declaring `needs_judge = True`)
is not an error: it is skipped with one line saying how to configure it, so `make demo` works out of the
box and still tells the user what they are missing.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from evalduck.flows.config import ScorerSpec
from evalduck.scorers import (
    JUDGE_MODEL_ENV,
    PREBUILT,
    ConfigError,
    JudgeSettings,
    Scorer,
    describe_validation,
    load_scorer,
    locate_scorer,
)

__all__ = ("Skipped", "build_scorers", "no_judge_message")


@dataclass(frozen=True)
class Skipped:
    """A scorer that will not run in this eval, and why (stored as status `skipped`)."""

    scorer_id: str
    reason: str
    version: str = ""
    higher_is_better: bool = True
    description: str = ""


def no_judge_message(scorer_id: str) -> str:
    """Why a judge scorer is skipped without a judge model, and the two ways to give it one."""
    return (
        f"{scorer_id} skipped: no judge model. Set {JUDGE_MODEL_ENV} (e.g. openai/gpt-4o-mini) with the "
        "provider's key (e.g. OPENAI_API_KEY), or use a local OpenAI-compatible server with --judge-model "
        "openai/<name> --judge-api-base http://127.0.0.1:8000/v1 (or OPENAI_API_BASE)."
    )


def _spec(value: Any) -> ScorerSpec:
    if isinstance(value, ScorerSpec):
        return value
    try:
        return ScorerSpec.model_validate(value)
    except ValidationError as exc:
        raise ConfigError(f"scorer {value!r}: {describe_validation(exc, noun='scorer field')}") from None


@dataclass(frozen=True)
class _Source:
    """Where a spec's scorer comes from: a PREBUILT entry or what an import path names (a Scorer or a factory),
    with the factory's declarations (SCORERS.md 0.6) when it has them."""

    build: Callable[[dict[str, Any]], Scorer]
    scorer_id: str
    version: str
    needs_judge: bool
    higher_is_better: bool
    description: str = ""


def _source(spec: ScorerSpec) -> _Source:
    if spec.id in PREBUILT:
        p = PREBUILT[spec.id]
        return _Source(p.factory, p.id, p.version, p.needs_judge, p.higher_is_better, p.description)
    try:
        found = locate_scorer(spec.id)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    declared = found if not isinstance(found, Scorer) else None
    return _Source(
        build=lambda options: load_scorer(spec.id, options),
        scorer_id=str(getattr(found, "scorer_id", None) or getattr(found, "id", None) or spec.id),
        version=str(getattr(found, "version", "") or ""),
        needs_judge=getattr(declared, "needs_judge", False) is True,
        higher_is_better=getattr(found, "higher_is_better", True) is not False,
        description=str(getattr(found, "description", "") or ""),
    )


def _given(options: Mapping[str, Any], name: str) -> Any:
    """A judge setting a spec's options give: by name (snake_case or camelCase) or in their ``judge``
    (a mapping or ``JudgeSettings``, whose defaults do not count as given)."""
    for key in (name, to_camel(name)):
        if options.get(key) is not None:
            return options[key]
    judge = options.get("judge")
    if isinstance(judge, JudgeSettings):
        return getattr(judge, name) if name in judge.model_fields_set else None
    return judge.get(name) if isinstance(judge, Mapping) else None


def build_scorers(
    scorers: Sequence[Scorer | ScorerSpec | str | Mapping[str, Any]],
    *,
    judge_model: str | None = None,
    judge_api_base: str | None = None,
    judge_timeout: float | None = None,
) -> tuple[list[Scorer], list[Skipped]]:
    """Scorer objects pass through; ids and import paths (specs) are built with their options.

    Raises:
        ValueError: an unknown scorer id, an import path that names no scorer, bad options (ConfigError), or
            two scorers with the same id.
    """
    built: list[Scorer] = []
    skipped: list[Skipped] = []
    for value in scorers:
        if isinstance(value, Scorer):
            built.append(value)
            continue
        spec = _spec(value)
        options = dict(spec.options)
        source = _source(spec)
        if source.needs_judge:
            model = _given(options, "model") or judge_model or os.environ.get(JUDGE_MODEL_ENV, "").strip()
            if not model:
                skipped.append(Skipped(source.scorer_id, no_judge_message(source.scorer_id), source.version,
                                       source.higher_is_better, source.description))
                continue
            # the run's settings fill in only what the scorer's own options leave out
            for name, value in (("model", model), ("api_base", judge_api_base), ("timeout", judge_timeout)):
                if value and not _given(options, name):
                    options[name] = value
        scorer = source.build(options)
        built.append(dataclasses.replace(scorer, samples=spec.samples) if spec.samples else scorer)
    ids = [s.id for s in built] + [s.scorer_id for s in skipped]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"scorer(s) given twice: {', '.join(dupes)} (one run stores one result per item and scorer)")
    return built, skipped
