"""Helpers for the judge-scorer tests: one step run on its own, from a run and earlier results."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from scorers import Scorer, StepOutput

JUDGE = {"model": "openai/fake-judge"}  # for tests that never send a request


def run_step(scorer: Scorer, step: str, run: Mapping[str, Any], results: Mapping[str, Any] | None = None) -> StepOutput:
    """``step`` of ``scorer`` on ``run`` (``output`` defaults to "x"), after ``results`` of the earlier steps."""
    ctx = scorer.context_for(step, {"output": "x", **run}, results)
    return asyncio.run(scorer.step(step).arun(ctx))


def score(scorer: Scorer, results: Mapping[str, Any], **run: Any) -> float:
    """generate_score on the given earlier results."""
    return float(run_step(scorer, "generate_score", run, results).result)
