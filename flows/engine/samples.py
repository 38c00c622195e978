"""Repeated judging: one cell judged K times (``judge_samples``), each sample a row of its own, and the cell's
row their aggregate. The aggregate is what every mean, comparison and gate reads, so K samples never count
as K items; the samples are what the judge's noise is measured on (flows/report/noise.py)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from evalduck.flows.store import SampleRow, ScoreRow

__all__ = ("Aggregate", "aggregate", "sample_row", "sampled_cell")

Aggregate = Literal["mean", "median", "majority"]


def aggregate(scores: Sequence[float], how: Aggregate) -> float:
    """The cell's score from its samples' scores: their mean, median, or majority (the most frequent score,
    as a verdict-style scorer gives few distinct values; a tie between the most frequent, their median)."""
    if not scores:
        raise ValueError("no scored sample to aggregate")
    if how == "mean":
        return statistics.fmean(scores)
    if how == "median":
        return float(statistics.median(scores))
    counts = Counter(round(s, 9) for s in scores)
    top = max(counts.values())
    return float(statistics.median(sorted(s for s, n in counts.items() if n == top)))


def sample_row(row: ScoreRow, sample: int) -> SampleRow:
    """What one sample said, from the cell row it would have been alone."""
    return SampleRow(run_id=row.run_id, item_id=row.item_id, scorer_id=row.scorer_id, sample=sample,
                     status=row.status, score=row.score, reason=row.reason, error=row.error,
                     analyze_step_result=row.analyze_step_result, judge_model=row.judge_model,
                     prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens, cost=row.cost,
                     latency_s=row.latency_s)


def _total(values: Sequence[float | int | None]) -> float | int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def sampled_cell(rows: Sequence[ScoreRow], how: Aggregate) -> tuple[ScoreRow, list[SampleRow]]:
    """The cell's row and its samples' rows from one row per sample (sample i the i-th).

    The cell is ``scored`` when a sample scored: its score aggregates the scored samples, its reason (headed
    "[sample i of K: score]") and step results are those of the sample nearest that score, its ``error`` says how many samples failed and why
    (a resume does not ask them again: the cell has a score). Tokens, cost and latency are the samples' sums.
    With no scored sample the cell is the first sample's error (a resume computes the cell again), or
    skipped when the scorer skipped the item."""
    samples = [sample_row(row, i) for i, row in enumerate(rows)]
    scored = [row for row in rows if row.status == "scored" and row.score is not None]
    usage = {
        "prompt_tokens": _total([r.prompt_tokens for r in rows]),
        "completion_tokens": _total([r.completion_tokens for r in rows]),
        "cost": _total([r.cost for r in rows]),
        "latency_s": _total([r.latency_s for r in rows]),
        "judge_model": ",".join(sorted({m for r in rows if r.judge_model for m in r.judge_model.split(",")})) or None,
        "samples": len(rows),
    }
    if not scored:
        first = next((r for r in rows if r.status == "error"), rows[0])
        return first.model_copy(update=usage), samples
    scores = [float(r.score) for r in scored]  # type: ignore[arg-type]
    score = aggregate(scores, how)
    nearest = min(scored, key=lambda r: abs(float(r.score) - score))  # type: ignore[arg-type]
    if nearest.reason is not None:  # it explains that sample's score, which the aggregate may not be: say whose
        usage["reason"] = f"[sample {rows.index(nearest)} of {len(rows)}: {nearest.score:.3g}] {nearest.reason}"
    failed = [r for r in rows if r.status != "scored"]
    error = None
    if failed:
        why = next((r.error or r.reason for r in failed if r.error or r.reason), None)
        error = f"{len(failed)} of {len(rows)} samples not scored" + (f" (first: {why})" if why else "")
    sd = statistics.stdev(scores) if len(scores) > 1 else None
    return nearest.model_copy(update={**usage, "score": score, "score_sd": sd, "error": error}), samples
