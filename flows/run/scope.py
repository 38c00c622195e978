"""What one run changes in its process, owned by the run and handed back after it.

- ``heartbeat_settings``: around a flow call, no flow-run heartbeats on a server of evalduck's own;
- ``run_scope``: around a run's body, Prefect's routine task-run lines filtered (engine/quiet.py), the garbage
  collector frozen, and the engine's services made: the judge transport (a leased judge child process, or
  litellm here) and, for runner 'dask', the dispatch over the run's Dask cluster.

Nothing here happens at import; the environment defaults are ``evalduck.flows.settings.apply_process_defaults``,
called by the entry points.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

from evalduck.flows.engine import EngineServices, RunPlan
from evalduck.flows.engine.plan import Dispatch, ProgressSink
from evalduck.flows.engine.quiet import quiet_task_run_info
from evalduck.flows.judge.process import leased_judge_process, litellm_settings_made_in_python
from evalduck.scorers import LiteLLMTransport

__all__ = ("heartbeat_settings", "run_scope", "frozen_gc")


_HEARTBEAT_VARIABLES = ("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY")


@contextlib.contextmanager
def heartbeat_settings(own_server: bool = False) -> Iterator[None]:
    """Around a flow call: no flow-run heartbeats in local mode (no ``PREFECT_API_URL``) or on a server evalduck
    started itself (``own_server``: this folder's, or a run's temporary one), unless the user set Prefect's
    heartbeat variable.

    Heartbeats serve Prefect's zombie-flow automation, which marks a run whose heartbeats stop as crashed; the
    servers evalduck starts have no automation, and a temporary one ends with this process. They cost every
    run: Prefect's heartbeat thread sleeps in one-second steps and a sync flow joins it on exit (0.5 s per run
    on average, docs/benchmarks.md). On a server the user names, heartbeats stay on."""
    from prefect.context import SettingsContext
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    asked = any(os.environ.get(name) for name in _HEARTBEAT_VARIABLES)
    if (settings.api.url and not own_server) or asked or settings.flows.heartbeat_frequency is None:
        yield
        return
    quiet = settings.model_copy(update={"flows": settings.flows.model_copy(update={"heartbeat_frequency": None})})
    current = SettingsContext.get()
    with SettingsContext(profile=current.profile if current else None, settings=quiet):  # type: ignore[arg-type]
        yield


@contextlib.contextmanager
def frozen_gc() -> Iterator[None]:
    """The objects that exist when the run starts (Prefect, litellm, pydantic: millions of them) are frozen
    out of the garbage collector for the run and handed back after it: a full collection scans them all and
    stopped the event loop for 200-350 ms each time, every item in flight waiting (docs/benchmarks.md)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _uses_child(plan: RunPlan, notes: list[str]) -> bool:
    """The judge child for a run that makes judge or model requests, unless litellm was set up in Python
    (looked at after the target is resolved: a target module may set it at import)."""
    calls_models = plan.target.settings is not None or any(st.is_judge for s in plan.scorers for st in s.steps)
    if not (plan.options.judge_process and calls_models) or plan.options.runner == "dask":  # workers ask there
        return False
    changed = litellm_settings_made_in_python()
    if changed:
        notes.append(f"litellm settings made in Python ({', '.join(changed)}) apply in this process only, so this "
                     "run's judge and model requests run here, not in the judge child process (set them through "
                     "environment variables to keep the child)")
    return not changed


@contextlib.contextmanager
def run_scope(plan: RunPlan, logger: logging.Logger | logging.LoggerAdapter[Any], *, sink: ProgressSink | None = None,
              on_progress: Callable[[int, int], Any] | None = None) -> Iterator[EngineServices]:
    """Around a run's body: the services ``execute`` gets (its judge transport and dispatch, with the caller's
    ``sink`` and ``on_progress``), with the chatter filter and the frozen GC."""
    notes: list[str] = []
    use_child = _uses_child(plan, notes)
    for note in notes:
        logger.warning(note)
        if sink is not None:
            sink.note(note)
    with quiet_task_run_info(), frozen_gc(), \
            leased_judge_process() if use_child else contextlib.nullcontext(LiteLLMTransport()) as transport, \
            _dispatch(plan) as dispatch:
        yield EngineServices(transport=transport, dispatch=dispatch, sink=sink, on_progress=on_progress)


@contextlib.contextmanager
def _dispatch(plan: RunPlan) -> Iterator[Dispatch | None]:
    """Runner 'dask': the dispatch over the run's Dask cluster (connected, or started and stopped here);
    else None, the engine's own (each task awaited on the run's loop)."""
    if plan.options.runner != "dask":
        yield None
        return
    from evalduck.flows.engine.dispatch import dask_dispatch

    with dask_dispatch(plan) as dispatch:
        yield dispatch
