"""The records that cross the store's boundary: what the flow writes and what the CLI reads."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ("ScoreRow", "SampleRow", "ScoreStatus", "RunRecord", "QueryResult", "SCORE_COLUMNS", "SAMPLE_COLUMNS",
           "JSON_SCORE_COLUMNS")

ScoreStatus = Literal["scored", "error", "skipped"]


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


class ScoreRow(BaseModel):
    """One cell: one scorer on one item of one run. `score` is None unless `status` is `scored`."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    item_id: str
    scorer_id: str
    scorer_version: str
    score: float | None = None
    status: ScoreStatus = "scored"
    reason: str | None = None
    error: str | None = None
    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    prompts: dict[str, Any] | None = Field(default=None, description="step name -> prompt text sent to the judge")
    judge_model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    latency_s: float | None = None
    created_at: datetime = Field(default_factory=_utcnow)
    # Repeated judging (a run's judge_samples > 1): how many samples the cell had and their standard
    # deviation; each sample is a SampleRow. None for a cell judged once.
    samples: int | None = None
    score_sd: float | None = None

    @model_validator(mode="after")
    def _score_only_when_scored(self) -> ScoreRow:
        if self.status == "scored" and self.score is None:
            raise ValueError(f"item {self.item_id!r}, scorer {self.scorer_id!r}: status 'scored' needs a score")
        if self.status != "scored" and self.score is not None:
            raise ValueError(
                f"item {self.item_id!r}, scorer {self.scorer_id!r}: status {self.status!r} must have score None, "
                f"got {self.score!r}"
            )
        return self


class SampleRow(BaseModel):
    """One sample of a cell judged several times (``score_samples``): the cell's row in ``scores`` holds
    their aggregate; these hold what each sample said, to measure the judge's agreement with itself."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    item_id: str
    scorer_id: str
    sample: int = Field(ge=0)
    status: ScoreStatus
    score: float | None = None
    reason: str | None = None
    error: str | None = None
    analyze_step_result: Any = None
    judge_model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    latency_s: float | None = None
    created_at: datetime = Field(default_factory=_utcnow)


SCORE_COLUMNS: tuple[str, ...] = tuple(ScoreRow.model_fields)
SAMPLE_COLUMNS: tuple[str, ...] = tuple(SampleRow.model_fields)
JSON_SCORE_COLUMNS: frozenset[str] = frozenset({"preprocess_step_result", "analyze_step_result", "prompts"})


class RunRecord(BaseModel):
    """A row of `runs` plus counts, as `evalduck runs` lists it."""

    run_id: str
    name: str | None
    dataset: str | None
    dataset_hash: str | None
    status: str
    started_at: datetime
    finished_at: datetime | None
    config: Any
    flow_run_id: str | None
    evalduck_version: str | None
    n_items: int = 0
    n_scores: int = 0
    n_errors: int = 0


class QueryResult(BaseModel):
    """Column names and rows of an ad-hoc query."""

    columns: list[str]
    rows: list[tuple[Any, ...]]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]
