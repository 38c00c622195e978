"""The eval flows: ``run_evals`` (the Python API, SPEC 4) and ``run_eval_config`` (one EvalConfig parameter:
the deployment entrypoint, rendered as a form in the Prefect UI).

``run_evals`` is a synchronous flow whose body runs one event loop: target and judge steps are async tasks
awaited on it (one HTTP client context for all task runs, at most ``concurrency`` items in flight), code
steps run over chunks of items. In-memory rows never travel as a flow parameter: the flow reports them to
the API as a short description, so any number of rows works (Prefect refuses parameters over 512 KiB).
"""

from __future__ import annotations

from flows.prefect_env import apply_defaults, local_mode_settings, quiet_task_run_info

apply_defaults()

import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import inspect  # noqa: E402
import os  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Callable, Mapping, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from prefect import get_run_logger  # noqa: E402
from prefect.context import AsyncClientContext, FlowRunContext  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402
from scorers import JudgeTransport, LiteLLMTransport, Scorer, run_sync  # noqa: E402

from flows.artifacts import (  # noqa: E402
    ProgressArtifact,
    artifact_key,
    comparison_markdown,
    publish_comparison,
    publish_summary,
    summary_rows,
)
from flows.config import (  # noqa: E402
    DEFAULT_SCORERS,
    DEMO_CONFIG,
    EvalConfig,
    RunOptions,
    ScorerSpec,
    bind_options,
    default_cache_dir,
)
from flows.datasets import Dataset, DatasetError, dataset_from_rows, load_dataset  # noqa: E402
from flows.engine import FailFast, ItemResult, RunPlan, execute  # noqa: E402
from flows.progress import current_sink  # noqa: E402
from flows.redacting_flow import RedactingFlow, redacting_flow  # noqa: E402
from flows.registry import build_scorers  # noqa: E402
from flows.store import Store, UnknownRunError, check_resume_dataset, default_db_path  # noqa: E402
from flows.targets import resolve_target  # noqa: E402
from flows.tasks import TaskOptions  # noqa: E402
from flows.judge_process import leased_judge_process, litellm_settings_made_in_python  # noqa: E402
from flows.local_server import reuse_recorded_server  # noqa: E402

__all__ = ("run_evals", "run_eval_config", "EvalResult", "ItemResult")


class EvalResult(BaseModel):
    """What a run returns: ``scores`` are means over scored items; ``summary`` counts every cell."""

    run_id: str
    name: str | None = None
    scores: dict[str, float | None] = Field(description="scorer id -> mean score over scored items")
    summary: dict[str, Any] = Field(description='{"totalItems": n, "scorers": {id: {scored, errored, ...}}}')
    db: str
    status: str = "completed"
    previous_run_id: str | None = None
    comparison: list[dict[str, Any]] | None = None
    flow_run_id: str | None = Field(default=None, description="the Prefect flow run that ran it")



def _load(data: Any) -> Dataset:
    if isinstance(data, (str, os.PathLike)):
        return load_dataset(data)
    if isinstance(data, Dataset):
        return data
    if isinstance(data, _Rows):
        data = data.rows
    return dataset_from_rows(list(data))


def _execute(
    *,
    data: Any,
    scorers: Sequence[Any],
    target: Any,
    options: RunOptions,
    on_item_complete: Callable[[ItemResult], Any] | None,
    config: Mapping[str, Any] | None = None,
) -> EvalResult:
    o = options
    logger = get_run_logger()
    sink = current_sink()

    # Everything that can be wrong with the inputs is found here, before any target or judge call.
    dataset = _load(data)
    built, skipped = build_scorers(scorers or list(DEFAULT_SCORERS), judge_model=o.judge_model,
                                   judge_api_base=o.judge_api_base)
    for sk in skipped:
        logger.warning(sk.reason)
        if sink is not None:
            sink.note(sk.reason)
    tgt = resolve_target(target, system_prompt=o.target_system_prompt, api_base=o.target_api_base)
    if not tgt.calls:
        missing = [f"{i.where} (item {i.item_id!r})" for i in dataset.items if i.output is None]
        if missing and built:
            raise DatasetError([f"{m}: missing `output` (no target given, so each item's `output` is scored)"
                                for m in missing], path=dataset.source)

    store = Store(o.db if o.db is not None else default_db_path())
    flow_ctx = FlowRunContext.get()
    flow_run_id = str(flow_ctx.flow_run.id) if flow_ctx and flow_ctx.flow_run else None
    todo: set[tuple[str, str]] | None = None
    previous: str | None = None
    if o.resume:
        run_id = store.resolve_run(o.resume)
        check_resume_dataset(store, run_id, dataset.source, dataset.hash, [i.item_id for i in dataset.items])
        done = store.completed_cells(run_id)
        all_ids = [s.id for s in built] + [s.scorer_id for s in skipped]
        todo = {(i.item_id, sid) for i in dataset.items for sid in all_ids} - done
        logger.info("resuming run %s: %d cell(s) to compute", run_id, len(todo))
    else:
        run_id = str(uuid.uuid4())
        if o.name:
            try:
                previous = store.resolve_run(o.name)
            except UnknownRunError:
                previous = None
    run_config = dict(config or {})
    run_config.setdefault("scorers", [{"id": s.id, "version": s.version, "options": dict(s.options)} for s in built])
    run_config.setdefault("target", tgt.label)
    store.start_run(run_id, o.name, dataset.source, dataset.hash, run_config, flow_run_id,
                    items=[i.store_record() for i in dataset.items])

    folder = Path(o.cache_dir) if o.cache_dir else default_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    opts = TaskOptions(cache_dir=folder.resolve(), retries=o.retries, backoff_s=o.retry_backoff_s, refresh=o.refresh)
    progress = ProgressArtifact(artifact_key(o.name, "progress"), o.progress_every)
    plan = RunPlan(
        run_id=run_id, items=dataset.items, scorers=built, skipped=skipped, target=tgt, store=store, opts=opts,
        concurrency=o.concurrency, judge_rpm=o.judge_rpm, fail_fast=o.fail_fast, chunk_size=o.chunk_size, todo=todo,
        on_item_complete=on_item_complete, on_progress=progress.update, sink=sink,
    )

    calls_models = tgt.settings is not None or any(step.is_judge for s in built for step in s.steps)
    use_child = o.judge_process and calls_models
    changed = litellm_settings_made_in_python() if use_child else []
    if changed:  # after resolve_target: a target module may set them at import
        use_child = False
        note = (f"litellm settings made in Python ({', '.join(changed)}) apply in this process only, so this run's "
                "judge and model requests run here, not in the judge child process (set them through environment "
                "variables to keep the child)")
        logger.warning(note)
        if sink is not None:
            sink.note(note)

    completed = False

    async def body(transport: JudgeTransport) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        """The run, then its summary and comparison artifacts, on one event loop and one API client."""
        nonlocal completed
        async with AsyncClientContext.get_or_create():
            await progress.start(f"items scored in run {run_id}")
            try:
                # Marks the run completed with its last results.
                await execute(dataclasses.replace(plan, transport=transport))
                completed = True
            finally:
                await progress.drain()
            rows = summary_rows(store.run_summary(run_id).scorers)
            comparison = store.compare(previous, run_id) if previous else None
            await publish_summary(artifact_key(o.name, "summary"), rows, f"evalduck run {run_id} ({len(dataset)} items)")
            if comparison is not None and previous is not None:
                await publish_comparison(artifact_key(o.name, "comparison"),
                                         comparison_markdown(comparison, previous, run_id, o.name),
                                         f"run {run_id} vs previous run {previous}")
            return rows, comparison

    try:
        with quiet_task_run_info(), \
                leased_judge_process() if use_child else contextlib.nullcontext(LiteLLMTransport()) as transport:
            rows, comparison = run_sync(body(transport))  # a helper thread when a loop already runs here
    except BaseException:
        if completed:  # the results are all stored; only the report after them failed
            raise
        try:
            store.finish_run(run_id, "failed")
        except Exception as exc:  # the run's own error (e.g. the store stayed locked) must surface
            logger.warning("run %s: could not record status 'failed' in %s: %s", run_id, store.path, exc)
        raise

    scores = {r["scorer"]: r["mean"] for r in rows}
    summary = {
        "totalItems": len(dataset.items),
        "scorers": {r["scorer"]: {k: v for k, v in r.items() if k != "scorer"} for r in rows},
    }
    logger.info("run %s: %s", run_id, ", ".join(f"{k}={v}" for k, v in scores.items()))
    return EvalResult(run_id=run_id, name=o.name, scores=scores, summary=summary, db=str(store.path),
                      previous_run_id=previous, comparison=comparison, flow_run_id=flow_run_id)


class _Rows:
    """In-memory rows in a plain object, so Prefect neither walks, validates nor serialises them."""

    __slots__ = ("rows",)

    def __init__(self, rows: Any) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"<{len(self.rows)} rows in memory>"


def _given_options(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The run options among ``run_evals``' arguments that the caller set (None means not given)."""
    return {key: value for key, value in arguments.items() if key in RunOptions.model_fields and value is not None}


class _EvalsFlow(RedactingFlow):
    """A Flow that keeps in-memory rows in this process (they land in the store's `items` table) and
    reports them and other Python objects to the API as short descriptions."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        bound = inspect.signature(self.fn).bind_partial(*args, **kwargs)
        # Bad options fail here, before a flow run exists (the body binds them again, for direct calls).
        bind_options(bound.arguments.get("options"), _given_options(bound.arguments))
        data = bound.arguments.get("data")
        if data is not None and not isinstance(data, (str, os.PathLike, _Rows, Dataset)):
            bound.arguments["data"] = _Rows(data)
        with reuse_recorded_server(), local_mode_settings():
            return super().__call__(*bound.args, **bound.kwargs)

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        params = dict(parameters)
        data = params.get("data")
        if data is not None and not isinstance(data, (str, os.PathLike)):
            params["data"] = repr(data if isinstance(data, _Rows) else _Rows(data))
        if params.get("scorers"):
            params["scorers"] = [s.id if isinstance(s, Scorer) else s for s in params["scorers"]]
        for key in ("target", "on_item_complete"):
            value = params.get(key)
            if callable(value):
                params[key] = f"<callable {getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', '?')}>"
        return super().serialize_parameters(params)


def _run_evals(
    data: Any,
    scorers: Any = None,
    target: Any = None,
    concurrency: int | None = None,
    on_item_complete: Any = None,
    name: str | None = None,
    db: str | None = None,
    *,
    options: RunOptions | None = None,
    judge_model: str | None = None,
    judge_api_base: str | None = None,
    judge_rpm: float | None = None,
    target_system_prompt: str | None = None,
    target_api_base: str | None = None,
    cache_dir: str | None = None,
    refresh: bool | None = None,
    resume: str | None = None,
    retries: int | None = None,
    retry_backoff_s: float | None = None,
    fail_fast: bool | None = None,
    chunk_size: int | None = None,
    progress_every: int | None = None,
    judge_process: bool | None = None,
) -> EvalResult:
    """Run scorers over a dataset and store every result in DuckDB.

    The run options (``concurrency`` and every keyword after ``options``) are ``RunOptions`` fields, with
    their defaults, bounds and help there; a keyword given here overrides the same field of ``options``,
    and each is checked as the UI form and the CLI check it (``ConfigError`` names the bad one).

    Args:
        data: rows (dicts with ``input`` and optional ``output``, ``groundTruth``, ``requestContext``, ``id``,
            ``metadata``) or a dataset file (.jsonl, .json, .csv, .parquet).
        scorers: Scorer objects and/or scorer ids ("tone-scorer", ...); default: the three prebuilt ones.
        target: None (score each item's ``output``), a callable (sync or async, called with the item's
            input), "module:function", or "model:<litellm model>".
        concurrency: items in flight at once (default 8).
        on_item_complete: called once per item with an ``ItemResult`` (sync or async).
        name: run name; the previous run of the same name is compared with this one.
        db: DuckDB file (default $EVALDUCK_DB, else ./evals.duckdb).
        options: a ``RunOptions`` to start from (e.g. one shared by several calls).
        judge_process: send judge and model requests through a child process (default), which keeps
            litellm's CPU work off the flow's event loop; False keeps them in this process. The child sees
            environment variables only: a run that finds litellm settings made in Python (callbacks,
            ``litellm.api_key``...) keeps its requests in this process and logs one warning line.
    """
    given = _given_options(locals())
    return _execute(data=data, scorers=scorers or list(DEFAULT_SCORERS), target=target,
                    options=bind_options(options, given), on_item_complete=on_item_complete)


run_evals: _EvalsFlow = _EvalsFlow(_run_evals, name="run-evals", persist_result=False, log_prints=False)


@redacting_flow(name="run-eval-config", persist_result=False, log_prints=False)
def run_eval_config(config: EvalConfig = DEMO_CONFIG) -> EvalResult:
    """Run an eval described by one EvalConfig (the deployment entrypoint; the UI renders it as a form).

    Args:
        config: dataset, scorers with options, target, judge model, concurrency, run name, database...
            (default: the demo eval, datasets/demo.jsonl, run name "demo").
    """
    return _execute(data=config.dataset, scorers=list(config.scorers), target=config.target,
                    options=config.options(), on_item_complete=None, config=config.model_dump(mode="json"))


__all__ += ("FailFast", "ScorerSpec")
