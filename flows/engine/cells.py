"""A cell's row (one item, one scorer) from its pipeline's state: scored, skipped (the scorer said the item
lacks what it needs: ``NotScorable``), or the error that stopped it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evalduck.flows.store import ScoreRow
from evalduck.scorers import NotScorable, PipelineState, Scorer, StepOutput

__all__ = ("cell_row", "error_row", "error_text", "usage_fields")


def error_row(run_id: str, scorer: Scorer, item_id: str, error: str, **fields: Any) -> ScoreRow:
    """A cell that ended in ``error`` (stored as such; a resume computes it again)."""
    return ScoreRow(run_id=run_id, item_id=item_id, scorer_id=scorer.id, scorer_version=scorer.version,
                    status="error", error=error, **fields)


def error_text(label: str, exc: BaseException) -> str:
    """``<step label>: <type>: <message>``, unless the message already starts with the label."""
    return str(exc) if str(exc).startswith(label) else f"{label}: {type(exc).__name__}: {exc}"


def cell_row(run_id: str, state: PipelineState, item_id: str, spent: Iterable[Mapping[str, Any]] = ()) -> ScoreRow:
    """The cell as stored. A failed generate_reason keeps the score it explains (status ``scored``, the
    reason's failure in ``error``); ``NotScorable`` is a ``skipped`` cell with its message as ``reason`` (out of
    the means, never retried, done for a resume); any other failure is the cell's error."""
    scorer = state.scorer
    usage = usage_fields(state.outputs, list(spent))
    if isinstance(state.error, NotScorable):
        return ScoreRow(run_id=run_id, item_id=item_id, scorer_id=scorer.id, scorer_version=scorer.version,
                        status="skipped", reason=str(state.error), **usage)
    failure = error_text(state.failed or scorer.id, state.error) if state.error is not None else None
    if not state.scored:
        return error_row(run_id, scorer, item_id, failure or f"{scorer.id}: no score", **usage)
    result = state.result()
    prompts = {name: o.prompt for name, o in state.outputs.items() if o.prompt is not None} or None
    return ScoreRow(
        run_id=run_id, item_id=item_id, scorer_id=scorer.id, scorer_version=scorer.version, status="scored",
        score=result.score, reason=result.reason, error=failure, preprocess_step_result=result.preprocess_step_result,
        analyze_step_result=result.analyze_step_result, prompts=prompts, **usage,
    )


def usage_fields(outputs: Mapping[str, StepOutput], spent: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Judge model, and the tokens/cost/latency this run spent (cached steps spent nothing)."""
    models = sorted({u.model for o in outputs.values() for u in o.usage})
    cost_values = [u["cost"] for u in spent if u.get("cost") is not None]
    return {
        "judge_model": ",".join(models) or None,
        "prompt_tokens": sum(u.get("prompt_tokens") or 0 for u in spent) if spent else None,
        "completion_tokens": sum(u.get("completion_tokens") or 0 for u in spent) if spent else None,
        "cost": sum(cost_values) if cost_values else None,
        "latency_s": round(sum(u.get("latency_s") or 0.0 for u in spent), 6) if spent else None,
    }
