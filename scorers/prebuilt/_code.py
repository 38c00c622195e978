"""The shape every prebuilt code scorer shares: an analysis of the run, then a score from that analysis."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scorers._context import ScorerInput
from scorers._scorer import Scorer, create_scorer

__all__ = ("analyze_then_score",)


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
