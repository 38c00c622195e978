"""RunOptions (how an eval runs) and EvalConfig (what it evaluates, plus those options): pydantic models, so
the Prefect UI renders a run form and the CLI, Python calls and deployments are validated the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from evalduck.flows.run_form import ADVANCED, plain_optionals, shape_run_form
from evalduck.scorers import PREBUILT, ConfigError, describe_validation, did_you_mean

__all__ = ("EvalConfig", "RunOptions", "bind_options", "ScorerSpec", "SCORER_IDS", "SCORER_ID_HELP", "is_import_path",
           "DEFAULT_SCORERS", "DEMO_CONFIG", "MAX_JUDGE_SAMPLES")

SCORER_IDS: tuple[str, ...] = tuple(PREBUILT)
# SCORERS.md 0.6: the default set stays the three seeds.
DEFAULT_SCORERS: tuple[str, ...] = ("answer-relevancy-scorer", "tone-scorer", "textual-difference-scorer")
# The one wording of what a scorer id may be: the UI form's help, the CLI's --scorer help, the error.
SCORER_ID_HELP = (f"A prebuilt scorer id ({', '.join(SCORER_IDS)}) or an import path 'module:attribute' to a Scorer "
                  "or to a factory called with the options (e.g. mypkg.evals:strict_tone).")


# The most samples a cell may be judged: past it the cost grows with no use (docs/judges.md).
MAX_JUDGE_SAMPLES = 20


def is_import_path(value: str) -> bool:
    """``module:attribute`` (evalduck.scorers.load_scorer checks the rest when the run is prepared)."""
    return ":" in value


class ScorerSpec(BaseModel):
    """A scorer by prebuilt id or import path, with its options (e.g. ``{"uncertainty_weight": 0.5}``)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=lambda schema, _cls: plain_optionals(schema))

    id: str = Field(description="A prebuilt scorer id (listed under Scorers) or an import path 'module:attribute'.")
    options: dict[str, Any] = Field(default_factory=dict, description="The scorer's options (see its factory).")
    samples: int | None = Field(
        default=None, ge=1, le=MAX_JUDGE_SAMPLES, description="Times this judge scorer judges each cell (empty: "
        "the run's judge_samples).",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_id(cls, value: Any) -> Any:
        return {"id": value} if isinstance(value, str) else value

    @field_validator("id")
    @classmethod
    def _known(cls, value: str) -> str:
        value = value.strip()
        if value in PREBUILT or is_import_path(value):
            return value
        # The error's hint, said after the value the user gave: an id close to it, or one whose name is close
        # without the "-scorer" they all share ("tone", "relevancy"; "no-such-scorer" is close to none).
        hint = (did_you_mean(value, SCORER_IDS, cutoff=0.8)
                or did_you_mean(value.removesuffix("-scorer"), {i.removesuffix("-scorer"): i for i in SCORER_IDS}))
        raise PydanticCustomError(
            "scorer_id", f"must be one of {', '.join(map(repr, SCORER_IDS))}, or an import path 'module:attribute' "
            "(e.g. mypkg.evals:strict_tone)", {"hint": hint} if hint else None)


class RunOptions(BaseModel):
    """How an eval runs: the one list of run options, their defaults, bounds and help.

    ``run_evals`` validates its keyword arguments through it, ``EvalConfig`` (the UI form, the CLI,
    ``prefect.yaml``) is built on it, and the engine gets it whole.
    """

    model_config = ConfigDict(extra="forbid")

    target_system_prompt: str | None = Field(default=None, description="System prompt for a 'model:' target.")
    target_api_base: str | None = Field(default=None, description="api_base for a 'model:' target.")
    target_timeout_s: float = Field(
        default=120.0, gt=0, description="Seconds one target call may take; past it the call fails (retried, "
        "then the item's error).",
    )
    judge_model: str | None = Field(
        default=None, description="litellm model for LLM-judge scorers; default $EVALDUCK_JUDGE_MODEL."
    )
    judge_api_base: str | None = Field(
        default=None, description="OpenAI-compatible server for the judge (default $OPENAI_API_BASE)."
    )
    judge_timeout_s: float | None = Field(
        default=None, gt=0, description="Seconds one judge request may take (default: each scorer's own, 60).",
    )
    judge_samples: int = Field(
        default=1, ge=1, le=MAX_JUDGE_SAMPLES, description="Times each judge scorer's cell is judged (sample i "
        "asks with seed i where the provider takes one, and is cached and stored on its own); the cell's score "
        "aggregates them (judge_aggregate) and the summary shows how much the judge disagrees with itself. "
        "1: once, as a run without repeats. Code scorers are never repeated. A scorer's own `samples` wins.",
    )
    judge_aggregate: Literal["mean", "median", "majority"] = Field(
        default="mean", description="How a cell's samples make its score: their mean, their median, or the "
        "majority verdict (the most frequent score; a tie, the median of the tied ones) for verdict-style scorers.",
    )
    concurrency: int = Field(default=8, ge=1, le=256, description="Items in flight at once.")
    judge_rpm: float | None = Field(
        default=None, gt=0, description="Judge requests per minute, shared by the whole run (empty: no limit)."
    )
    max_cost: float | None = Field(
        default=None, gt=0, description="Budget in USD: once the run's spend (the cost litellm reports for its "
        "judge and model requests; a resumed run's stored cells count too) reaches it, no new request is sent, "
        "those in flight are stored and the run ends `budget_exceeded` (empty: no budget).",
    )
    allow_unpriced: bool = Field(
        default=False, description="With max_cost: run even when litellm has no price for a model the run calls "
        "(its requests count as free); off: such a run is refused before it starts.",
    )
    name: str | None = Field(
        default=None, title="Eval name", description="What this run is compared with: the previous completed run "
        "of this name (empty: none). Prefect's Run Name above only labels the flow run.",
    )
    db: str | None = Field(default=None, description="DuckDB file (default $EVALDUCK_DB, else ./evals.duckdb).")
    cache_dir: str | None = Field(
        default=None, description="Step cache folder (default $EVALDUCK_CACHE_DIR, else ./.evalduck/cache)."
    )
    refresh: bool = Field(default=False, description="Ignore cached step results and call the target/judge again.")
    explain_cache: bool = Field(
        default=False, description="After the run, show per step how many results came from the step cache and, "
        "for the others, what changed in their key since the item's last run (code and the file edited, version, "
        "params, judge, input/output/ground_truth, earlier results), or 'never computed before'.",
    )
    resume: str | None = Field(default=None, description="Run id or name to resume: only missing/errored cells run.")
    retries: int = Field(default=3, ge=0, le=10, description="Retries of transient target/judge errors.")
    retry_backoff_s: float = Field(default=1.0, ge=0, description="First retry delay; doubles each retry (jittered).")
    fail_fast: bool = Field(default=False, description="Stop the run at the first item that ends in error.")
    chunk_size: int = Field(default=2000, ge=1, description="Items per task for cheap code steps.")
    progress_every: int = Field(default=25, ge=1, description="Update the progress artifact every N items.")
    report: bool = Field(
        default=True, description="At the end of the run, write its HTML report to reports/<name>-<run id>.html "
        "beside the DuckDB file (linked from the summary artifact); off: no file (`evalduck report` writes one later).",
    )
    judge_process: bool = Field(
        default=True,
        description="Judge and model requests in a child process (keeps litellm's CPU off the flow's loop); "
        "off: in the flow's process. litellm settings made in Python keep them there by themselves.",
    )
    runner: Literal["local", "dask"] = Field(
        default="local", description="Where target calls, judge steps and code chunks run: 'local' (this "
        "process's event loop) or 'dask' (the workers of a Dask cluster; docs/scale-out.md).",
    )
    dask_address: str | None = Field(
        default=None, pattern=r"^[a-z]+://\S+$", description="Dask scheduler to use with runner 'dask', e.g. "
        "tcp://10.0.0.5:8786 (empty: a LocalCluster of `workers` processes on this machine).",
    )
    workers: int = Field(default=2, ge=1, le=64, description="Worker processes of the LocalCluster that "
                         "runner 'dask' starts when no dask_address is given.")

    @field_validator("runner")
    @classmethod
    def _dask_runner_needs_the_extra(cls, value: str) -> str:
        """Dask is an extra (evalduck[dask]): say so at option time, not as an ImportError mid-run."""
        if value == "dask":
            try:  # the run imports them anyway
                import distributed  # noqa: F401
                import prefect_dask  # noqa: F401
            except ImportError:
                raise ValueError("needs the dask extra for the dask runner: pip install 'evalduck[dask]'") from None
        return value

    @field_validator("dask_address")
    @classmethod
    def _dask_address_needs_dask(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value and info.data.get("runner") != "dask":
            raise ValueError("is only for runner 'dask': set runner 'dask' (--runner dask) too, or drop the address")
        return value


def bind_options(base: RunOptions | None, given: Mapping[str, Any]) -> RunOptions:
    """``base`` (or the defaults) with the fields in ``given`` replaced, checked again as a whole.

    Raises:
        ConfigError: a bad value or an unknown option, named (``model_copy(update=)`` would check nothing).
    """
    data = base.model_dump() if base is not None else {}
    try:
        return RunOptions.model_validate({**data, **given})
    except ValidationError as exc:
        raise ConfigError(describe_validation(exc)) from None


class _WhatToEvaluate(BaseModel):
    """The dataset, scorers and target of an eval: what ``run_evals`` takes as Python objects."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(description="Dataset file: .jsonl, .json, .csv or .parquet (relative to the working dir).")
    scorers: list[ScorerSpec] = Field(
        default_factory=lambda: [ScorerSpec(id=s) for s in DEFAULT_SCORERS],
        description=f"Scorers to run, each an id with options. {SCORER_ID_HELP} Default: {', '.join(DEFAULT_SCORERS)}.",
    )
    target: str | None = Field(
        default=None,
        description="Empty: score each item's `output`; 'module:function' (sync or async, called with the "
        "item's input); or 'model:' and a litellm model (e.g. model:openai/gpt-4o-mini).",
    )


class EvalConfig(RunOptions, _WhatToEvaluate):
    """Everything one eval run needs: what to evaluate, then the run options (the form lists them in that
    order). Field descriptions become the Prefect UI's form help; its JSON schema is shaped for that form
    (flows/run_form.py), which sends the run options it does not show first in one ``advanced`` object."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=lambda schema, _cls: shape_run_form(schema))

    @model_validator(mode="before")
    @classmethod
    def _unfold_advanced(cls, value: Any) -> Any:
        """The form's ``advanced`` object (run options) merged into the fields; each option given once."""
        if not isinstance(value, Mapping) or ADVANCED not in value:
            return value
        data = dict(value)
        advanced = data.pop(ADVANCED) or {}
        if not isinstance(advanced, Mapping):
            raise ValueError(f"`{ADVANCED}` must be an object of run options, got {advanced!r}")
        twice = sorted(set(advanced) & set(data))
        if twice:
            raise ValueError(f"{', '.join(twice)} given in `{ADVANCED}` and beside it: give each once")
        return {**data, **advanced}

    def options(self) -> RunOptions:
        """The run options alone."""
        return RunOptions.model_validate(self.model_dump(include=set(RunOptions.model_fields)))


# The default of the deployment flows' `config` parameter (run_eval_config, regression_check): the demo
# eval, on the shipped dataset (relative to the project folder, where deployments run). With a default,
# the flows' parameter schema has no required parameter, so the Prefect UI's Run -> Quick run creates the
# run at once with the deployment's parameters; a required one makes it open a "Run Deployment" dialog.
# Deployments and callers pass their own config. Never mutated: the flows only read it.
DEMO_CONFIG = EvalConfig(dataset="datasets/demo.jsonl", name="demo")
