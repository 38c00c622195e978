"""The shape every prebuilt code scorer shares: an analysis of the run, then a score from that analysis."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from evalduck.scorers._context import ScorerInput, StepContext
from evalduck.scorers._scorer import Scorer, create_scorer
from evalduck.scorers.prebuilt._text import answer, reference_or_input

__all__ = ("analyze_then_score", "code_scorer", "on_reference_and_output")

T = TypeVar("T")


def on_reference_and_output(scorer_id: str, fn: Callable[[str, str], T]) -> Callable[[StepContext], T]:
    """A step function applying ``fn(reference, output)`` to the run's reference text (the ground truth when
    given, else the input: SCORERS.md 0.5) and its output text."""
    return lambda ctx: fn(reference_or_input(ctx.run, scorer_id), answer(ctx.run))


CodeStep = tuple[Callable[[StepContext], Any], Mapping[str, Any]]


def code_scorer(scorer_id: str, version: str, description: str, *, options: Mapping[str, Any] | None = None,
                **steps: CodeStep) -> Scorer:
    """A scorer of function steps, each given as ``(fn(ctx), the parameters its cache key depends on)``."""
    return create_scorer(
        scorer_id, version=version, description=description, options=options,
        **{name: fn for name, (fn, _) in steps.items()},
        step_params={name: dict(params) for name, (_, params) in steps.items()},
    )


def analyze_then_score(
    scorer_id: str,
    version: str,
    description: str,
    *,
    analyze: tuple[Callable[[ScorerInput], Any], Mapping[str, Any]],
    score: tuple[Callable[[Any], float], Mapping[str, Any]],
    options: Mapping[str, Any],
) -> Scorer:
    """``analyze`` and ``score`` are each a pure function with the parameters its cache key depends on, so
    changing one step's parameter re-runs only that step (and the ones after it)."""
    analysis, analyze_params = analyze
    scoring, score_params = score
    return create_scorer(
        scorer_id, version=version, description=description, options=options,
        analyze=lambda ctx: analysis(ctx.run),
        generate_score=lambda ctx: scoring(ctx.results["analyze"]),
        step_params={"analyze": dict(analyze_params), "generate_score": dict(score_params)},
    )
