"""The eval flows: ``run_evals`` (the Python API, SPEC 4) and ``run_eval_config`` (one EvalConfig parameter:
the deployment entrypoint, rendered as a form in the Prefect UI).

A run is prepare (flows/run/prepare.py: inputs checked, run started, planned), execute (flows/engine/), report
(flows/run/finish.py: artifacts, the result), inside the run's scope (flows/run/scope.py). ``run_evals`` is a
synchronous flow whose body runs one event loop: target and judge steps are async tasks awaited on it (one
HTTP client context for all task runs). In-memory rows never travel as a flow parameter: the flow reports
them to the API as a short description, so any number of rows works (Prefect refuses parameters over 512 KiB).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefect import get_run_logger
from prefect.context import AsyncClientContext, FlowRunContext
from prefect.exceptions import TerminationSignal
from prefect.settings import get_current_settings

from evalduck.flows.config import DEFAULT_SCORERS, DEMO_CONFIG, EvalConfig, RunOptions, ScorerSpec, bind_options
from evalduck.flows.engine import EngineServices, Executed, FailFast, ItemResult, execute
from evalduck.flows.engine.cache_ledger import cache_summary
from evalduck.flows.engine.plan import ProgressSink
from evalduck.flows.inputs.datasets import Dataset
from evalduck.flows.inputs.targets import importable_here
from evalduck.flows.local.server import reuse_recorded_server
from evalduck.flows.report.artifacts import ProgressArtifact, artifact_key
from evalduck.flows.run.console import end_promptly, print_summary, shown_run
from evalduck.flows.run.finish import EvalResult, Report, eval_result, publish_report
from evalduck.flows.run.preflight import Preflight
from evalduck.flows.run.preflight_view import dry_run as preflight_only
from evalduck.flows.run.prepare import Prepared, Rows, prepare_run
from evalduck.flows.run.progress import current_sink
from evalduck.flows.run.redacting_flow import RedactingFlow, redacting_flow
from evalduck.flows.run.scope import heartbeat_settings, run_scope
from evalduck.flows.run.started import announce as announce_started
from evalduck.flows.run.watch import keep_result
from evalduck.flows.settings import apply_process_defaults
from evalduck.scorers import ConfigError, Scorer, run_sync

__all__ = ("run_evals", "run_eval_config", "EvalResult", "ItemResult", "FailFast", "ScorerSpec")

@dataclass(frozen=True)
class _Call:
    """What a run is asked to do, every option bound: the flows' one way from their arguments to a run."""

    data: Any
    scorers: Sequence[Any]
    target: Any
    options: RunOptions
    on_item_complete: Callable[[ItemResult], Any] | None = None
    config: Mapping[str, Any] | None = None  # run_eval_config's EvalConfig, stored as the run's config


def _execute(call: _Call) -> EvalResult:
    """Prepare, execute, report; a run that fails before all its results are stored is marked failed."""
    logger = get_run_logger()
    flow_ctx = FlowRunContext.get()
    flow_run_id = str(flow_ctx.flow_run.id) if flow_ctx and flow_ctx.flow_run else None
    sink = current_sink()
    if call.options.max_cost is not None:  # a budget its preflight's low estimate fits in (imported only then)
        from evalduck.flows.run.over_budget import refuse_over_budget

        refuse_over_budget(call.data, call.scorers, call.target, call.options)
    prepared = prepare_run(data=call.data, scorers=call.scorers, target=call.target, options=call.options,
                           on_item_complete=call.on_item_complete, config=call.config, flow_run_id=flow_run_id,
                           sink=sink, logger=logger)
    plan = prepared.plan
    announce_started(plan.run_id)
    executed, report = _run(prepared, sink, logger)
    logger.info("run %s: %s", plan.run_id, ", ".join(
        f"{r['scorer']}={'–' if r['mean'] is None else format(r['mean'], '.3f')}" for r in report[0]))
    if plan.options.explain_cache and executed.cache:
        logger.info("step cache: %s", "; ".join(cache_summary(line) for line in executed.cache))
    result = eval_result(prepared, executed, report, flow_run_id)
    keep_result(result)  # for the command, should the flow's end fail on a server that went away
    return result


@dataclass
class _Ending:
    """What the flow's failure path needs to know: whether ``execute`` returned. Before that, a run that ends
    is marked failed (or cancelled); after it, every result is stored and the run completed, and only its
    report (or the end of its scope) failed."""

    executed: Executed | None = None


def _run(prepared: Prepared, sink: ProgressSink | None, logger: Any) -> tuple[Executed, Report]:
    """The run in its scope, which makes the engine's services: execute, then the report."""
    plan = prepared.plan
    progress = ProgressArtifact(artifact_key(plan.options.name, "progress"), plan.options.progress_every)
    ending = _Ending()
    try:
        with run_scope(plan, logger, sink=sink, on_progress=progress.update) as services:
            return run_sync(_on_one_loop(prepared, services, progress, ending))  # a helper thread when a loop runs here
    except BaseException as exc:
        if ending.executed is None:
            _record_end(prepared, sink, "cancelled" if isinstance(exc, _CANCELLED) else "failed", logger)
        raise


async def _on_one_loop(prepared: Prepared, services: EngineServices, progress: ProgressArtifact,
                       ending: _Ending) -> tuple[Executed, Report]:
    """The run, then its report, on one event loop and one API client."""
    async with AsyncClientContext.get_or_create():
        await progress.start(f"items scored in run {prepared.plan.run_id}")
        try:
            ending.executed = await execute(prepared.plan, services)  # marks the run completed with its last results
        finally:
            await progress.drain()
        return ending.executed, await publish_report(prepared)


# Ctrl-C; SIGTERM (Prefect turns it into TerminationSignal inside a flow run; the CLI outside one).
_CANCELLED = (KeyboardInterrupt, asyncio.CancelledError, TerminationSignal)


def _record_end(prepared: Prepared, sink: ProgressSink | None, status: str, logger: Any) -> None:
    """A run that ended before all its results were stored: ``failed``, or ``cancelled`` by the user."""
    plan = prepared.plan
    try:
        plan.store.finish_run(plan.run_id, status)
    except Exception as exc:  # the run's own error (e.g. the store stayed locked) must surface
        logger.warning("run %s: could not record status %r in %s: %s", plan.run_id, status, plan.store.path, exc)
        return
    if status == "cancelled" and sink is not None:
        sink.note(f"run {plan.run_id} cancelled: its stored cells are kept; `--resume {plan.run_id}` "
                  "computes the rest")


def _bound_call(arguments: Mapping[str, Any]) -> _Call:
    """``run_evals``' arguments bound into a run: each run option from its keyword, else ``options``, else the
    environment and the project file (flows/project/file.py), else its default; ``data``, ``scorers`` and
    ``target`` from the call, else the project file (the prebuilt scorers by default).

    Raises:
        ConfigError: a bad option (named), a bad project file, or no data anywhere.
    """
    options: RunOptions | None = arguments.get("options")
    given = {key: value for key, value in arguments.items() if key in RunOptions.model_fields and value is not None}
    project = _project_settings(given, options)
    data = arguments.get("data")
    if data is None:
        data = project.get("dataset")
        if data is None:
            raise ConfigError("run_evals: no data given, and the project file sets no `dataset`")
    target = arguments.get("target")
    return _Call(data=data, scorers=arguments.get("scorers") or project.get("scorers") or list(DEFAULT_SCORERS),
                 target=target if target is not None else project.get("target"),
                 options=bind_options(options, {**_options_of(project), **given}),
                 on_item_complete=arguments.get("on_item_complete"))


class _EvalsFlow(RedactingFlow):
    """A Flow that keeps in-memory rows in this process (they land in the store's `items` table) and
    reports them and other Python objects to the API as short descriptions; a call shows the CLI's progress
    bar and summary unless ``quiet`` (flows/run/console.py)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        bound = inspect.signature(self.fn).bind_partial(*args, **kwargs)
        # Bad options fail here, before a flow run exists; the body binds them the same way, as it must when
        # Prefect calls it without this (a deployment of run_evals, a served flow).
        call = _bound_call(bound.arguments)
        if bound.arguments.get("dry_run"):  # the preflight instead of the run: no flow run, nothing stored
            return preflight_only(call.data, call.scorers, call.target, call.options, quiet=bool(bound.arguments.get("quiet")))
        data = bound.arguments.get("data")
        if data is not None and not isinstance(data, (str, os.PathLike, Rows, Dataset)):
            bound.arguments["data"] = Rows(data)
        apply_process_defaults()
        quiet = bool(bound.arguments.get("quiet"))
        with (reuse_recorded_server() as folder_server, heartbeat_settings(own_server=folder_server is not None),
              shown_run(quiet)):
            api_url = get_current_settings().api.url  # None: Prefect's temporary server, gone at exit
            try:
                result = super().__call__(*bound.args, **bound.kwargs)
            finally:
                end_promptly()
        if not quiet and isinstance(result, EvalResult):  # return_state=True returns a State
            print_summary(result, api_url)
        return result

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        params = dict(parameters)
        data = params.get("data")
        if data is not None and not isinstance(data, (str, os.PathLike)):
            params["data"] = repr(data if isinstance(data, Rows) else Rows(data))
        if params.get("scorers"):
            params["scorers"] = [s.id if isinstance(s, Scorer) else s for s in params["scorers"]]
        for key in ("target", "on_item_complete"):
            value = params.get(key)
            if callable(value):
                params[key] = f"<callable {getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', '?')}>"
        return super().serialize_parameters(params)


def _run_evals(  # noqa: D417 - the run options are documented once, as RunOptions' fields
    data: Any = None,
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
    max_cost: float | None = None,
    allow_unpriced: bool | None = None,
    judge_samples: int | None = None,
    judge_aggregate: str | None = None,
    target_system_prompt: str | None = None,
    target_api_base: str | None = None,
    target_timeout_s: float | None = None,
    judge_timeout_s: float | None = None,
    cache_dir: str | None = None,
    refresh: bool | None = None,
    explain_cache: bool | None = None,
    resume: str | None = None,
    retries: int | None = None,
    retry_backoff_s: float | None = None,
    fail_fast: bool | None = None,
    chunk_size: int | None = None,
    progress_every: int | None = None,
    judge_process: bool | None = None,
    report: bool | None = None,
    runner: str | None = None,
    dask_address: str | None = None,
    workers: int | None = None,
    quiet: bool = False,
    dry_run: bool = False,
) -> EvalResult | Preflight:
    """Run scorers over a dataset and store every result in DuckDB.

    The run options (``concurrency`` and every keyword after ``options``) are ``RunOptions`` fields, with
    their defaults, bounds and help there; a keyword given here overrides the same field of ``options``, and
    each is checked as the UI form and the CLI check it (``ConfigError`` names the bad one). The project file
    (``evalduck.toml``, flows/project/root.py) fills in every argument and run option not given here, in
    ``options`` or by its environment variable.

    Args:
        data: rows (dicts with ``input`` and optional ``output``, ``groundTruth``, ``requestContext``, ``id``,
            ``metadata``) or a dataset file (.jsonl, .json, .csv, .parquet); default: the project's ``dataset``.
        scorers: Scorer objects and/or scorer ids ("tone-scorer", ...); default: the three prebuilt ones.
        target: None (score each item's ``output``), a callable (sync or async, called with the item's
            input), "module:function", or "model:<litellm model>".
        on_item_complete: called once per item with an ``ItemResult`` (sync or async).
        options: a ``RunOptions`` to start from (e.g. one shared by several calls).
        quiet: show nothing; by default the call shows what `evalduck run` shows: a progress bar on stderr
            (on a terminal) and the summary table on stdout. Prefect's own INFO console lines are held back
            either way (they reach the Prefect API and UI). Not a run option: it changes no result.
        dry_run: check everything and return the run's ``Preflight`` (its requests, cache hits, tokens and cost;
            docs/cost.md) instead of running it: nothing is sent or stored, and no flow run is made.
    """
    call = _bound_call(locals())  # the arguments, as Prefect or __call__ passed them
    return preflight_only(call.data, call.scorers, call.target, call.options, quiet=quiet) if dry_run else _execute(call)


def _options_of(settings: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in settings.items() if key in RunOptions.model_fields}


def _project_settings(given: Mapping[str, Any], options: RunOptions | None) -> dict[str, Any]:
    """What the environment and the project file (flows/project/file.py) set that the call does not:
    keywords, and fields set in ``options``, win."""
    from evalduck.flows.project.file import ProjectFileError, run_settings

    try:
        settings = run_settings(given)
    except ProjectFileError as exc:
        raise ConfigError(str(exc)) from None
    taken = set(given) | (options.model_fields_set if options is not None else set())
    return {key: value for key, value in settings.items() if key not in taken}


run_evals: _EvalsFlow = _EvalsFlow(_run_evals, name="run-evals", persist_result=False, log_prints=False)


@redacting_flow(name="run-eval-config", persist_result=False, log_prints=False)
def run_eval_config(config: EvalConfig = DEMO_CONFIG) -> EvalResult:
    """Run an eval described by one EvalConfig (the deployment entrypoint; the UI renders it as a form).

    Args:
        config: What to evaluate (dataset, scorers, target, judge model) and the eval name runs are
            compared by; the other run options under Advanced options (default: the demo eval).
    """
    importable_here()  # a deployment's flow runs in the project folder, entered after its process started
    return _execute(_Call(data=config.dataset, scorers=list(config.scorers), target=config.target,
                          options=config.options(), config=config.model_dump(mode="json")))

