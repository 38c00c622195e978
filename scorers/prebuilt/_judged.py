"""Parts the judge scorers of SCORERS.md share: the scorer built from parsed options (``judge_scorer``),
prompt blocks, enumerated answers, count checks, the rounded scores, and the fixed reason a shortcut
analysis gets."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from evalduck.scorers._context import StepContext
from evalduck.scorers._rounding import round_half_up
from evalduck.scorers._scorer import Scorer, create_scorer
from evalduck.scorers.prebuilt._options import JudgeOptions, ScaleOptions
from evalduck.scorers.prebuilt._passages import ContextOption, resolve_context

__all__ = (
    "ContextJudgeOptions",
    "ScaledJudgeOptions",
    "OneOf",
    "YesNo",
    "block",
    "context_block",
    "context_resolver",
    "judge_scorer",
    "json_block",
    "normalised",
    "one_per_passage",
    "one_per",
    "reason_prompt",
    "scaled",
    "share_of",
    "shortcut_reason",
    "step_result",
)


class ScaledJudgeOptions(ScaleOptions, JudgeOptions):
    """A judge scorer's options with ``scale`` (SCORERS.md 0.4)."""


class ContextJudgeOptions(ScaledJudgeOptions):
    """... and the ``context`` option of the scorers that read one (SCORERS.md 0.1)."""

    context: ContextOption = None


def judge_scorer(scorer_id: str, opts: JudgeOptions, *, options: Mapping[str, Any], **parts: Any) -> Scorer:
    """``create_scorer`` for a judge scorer: its judge is the one ``opts`` describe, and the options stored
    with its runs are ``options`` (the scorer's own, in the order given) then the judge's public settings.

    ``parts`` are create_scorer's other arguments (version, description, instructions, the steps, ...)."""
    settings = opts.judge_settings()
    return create_scorer(scorer_id, judge=settings, options={**options, **settings.public_dict()}, **parts)


def block(tag: str, text: str) -> str:
    """Text between tags, so the judge (and the fake judge) can tell the parts of a prompt apart."""
    return f"<{tag}>\n{text}\n</{tag}>"


def json_block(tag: str, value: Any) -> str:
    """A list or object as indented JSON between tags."""
    return block(tag, json.dumps(value, ensure_ascii=False, indent=1))


def context_block(passages: Sequence[str]) -> str:
    """The passages, numbered from 0 in retrieval order."""
    return json_block("context", [{"context_index": i, "passage": p} for i, p in enumerate(passages)])


def context_resolver(
    option: list[str] | None, scorer_id: str, *, tool_results_fallback: bool = False
) -> Callable[[StepContext], list[str]]:
    """The passages a step judges against (``resolve_context``: SCORERS.md 0.1's context resolution)."""
    return lambda ctx: resolve_context(ctx.run, option, scorer_id, tool_results_fallback=tool_results_fallback)


def normalised(value: Any) -> str:
    """An enumerated answer as compared: trimmed and lower-cased (``" YES "`` is ``yes``)."""
    return str(value).strip().lower()


class OneOf:
    """Annotated metadata for an enumerated string answer: accepted trimmed and in any case, stored
    normalised, listed as an ``enum`` in the JSON schema (``Annotated[str, OneOf("yes", "no")]``)."""

    def __init__(self, *values: str) -> None:
        self.values = values

    def _known(self, value: str) -> str:
        if normalised(value) not in self.values:
            raise ValueError(f"must be one of {', '.join(self.values)}")
        return normalised(value)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self._known, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {**handler(schema), "enum": list(self.values)}


YesNo = Annotated[str, OneOf("yes", "no")]


def step_result(ctx: StepContext, step: str, key: str) -> list[Any]:
    """``ctx.results[step][key]`` as a list ([] when the step or the key is absent)."""
    return list((ctx.results.get(step) or {}).get(key) or [])


def one_per(
    expected: Callable[[StepContext], Sequence[Any]], field: str, noun: str
) -> Callable[[StepContext, Any], None]:
    """A check that the answer's ``field`` has exactly one entry per item of ``expected(ctx)``."""

    def check(ctx: StepContext, parsed: Any) -> None:
        want, got = len(expected(ctx)), len(getattr(parsed, field))
        if got != want:
            raise ValueError(f"expected {want} entr{'y' if want == 1 else 'ies'} in `{field}`, one per {noun}, got {got}")

    return check


def one_per_passage(
    context: Callable[[StepContext], Sequence[str]], field: str
) -> Callable[[StepContext, Any], None]:
    """A check that the answer's ``field`` has one entry per passage, with ``context_index`` exactly 0..n-1."""

    def check(ctx: StepContext, parsed: Any) -> None:
        n, entries = len(context(ctx)), getattr(parsed, field)
        indices = sorted(e.context_index for e in entries)
        if indices != list(range(n)):
            raise ValueError(
                f"expected one entry in `{field}` per passage, with `context_index` exactly 0..{n - 1} "
                f"(0-based, {n} passage(s)), got indices {indices}"
            )

    return check


def scaled(value: float, scale: float) -> float:
    """``round_half_up(value * scale, 2)``, never above ``scale`` (a scale with more decimals must not
    round past itself)."""
    return min(round_half_up(value * scale), scale)


def share_of(answers: Sequence[Any], wanted: str, scale: float) -> float:
    """The share of ``answers`` equal to ``wanted`` (normalised), scaled and rounded; 0 for no answers."""
    if not answers:
        return 0.0
    return scaled(sum(normalised(a) == wanted for a in answers) / len(answers), scale)


def reason_prompt(metric: str, task: str, *blocks: str, score: float | None) -> str:
    """generate_reason's prompt: explain the given score (never recompute it) from the blocks shown."""
    parts = "\n\n".join(blocks)
    return f"""\
{task} Use the score as given; do not recompute or change it. Reply in two or three sentences of plain
text.

{block("metric", metric)}

{parts}

{block("score", f"{score}")}"""


def shortcut_reason(
    analyze_shortcut: Callable[[StepContext], Any], sentence: Callable[[StepContext], str]
) -> Callable[[StepContext], str | None]:
    """generate_reason's shortcut: when analyze was a shortcut (nothing was judged), a fixed sentence."""

    def shortcut(ctx: StepContext) -> str | None:
        return None if analyze_shortcut(ctx) is None else sentence(ctx)

    return shortcut
