"""Everything that can be wrong with a run's inputs is found here, before any target or judge call: the
dataset, the scorers, the target, the store; then the run is recorded as started and planned."""

from __future__ import annotations

import logging
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from evalduck.errors import EvalduckError
from evalduck.flows.config import DEFAULT_SCORERS, RunOptions
from evalduck.flows.engine import ItemResult, RunPlan
from evalduck.flows.engine.plan import ProgressSink
from evalduck.flows.inputs.datasets import Dataset, DatasetError, dataset_from_rows, load_dataset
from evalduck.flows.inputs.registry import Skipped, build_scorers
from evalduck.flows.inputs.targets import Target, resolve_target
from evalduck.flows.project.defaults import default_cache_dir
from evalduck.flows.run.max_cost import refuse_unpriced
from evalduck.flows.store import Store, StoreDiskError, check_resume_dataset, default_db_path
from evalduck.scorers import Scorer

__all__ = ("Prepared", "Rows", "prepare_run", "load_data", "cache_folder", "CacheDirError")


class CacheDirError(EvalduckError, ValueError):
    """The step cache folder cannot be made or written (a file in its path, a read-only disk, no permission)."""


class Rows:
    """In-memory rows in a plain object, so Prefect neither walks, validates nor serialises them."""

    __slots__ = ("rows",)

    def __init__(self, rows: Any) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"<{len(self.rows)} rows in memory>"


@dataclass
class Prepared:
    """A planned run, and what its report needs besides the plan."""

    plan: RunPlan
    dataset: Dataset
    previous: str | None  # the previous run of the same name, compared in the report


def load_data(data: Any) -> Dataset:
    """A dataset from a file path, a ``Dataset``, or in-memory rows."""
    if isinstance(data, (str, os.PathLike)):
        return load_dataset(data)
    if isinstance(data, Dataset):
        return data
    if isinstance(data, Rows):
        data = data.rows
    return dataset_from_rows(list(data))


def cache_folder(configured: str | None) -> Path:
    """The step cache folder (made if missing), checked writable now, before the run is recorded or any
    target or judge is called: one line instead of a traceback from inside Prefect's result storage."""
    folder = Path(configured) if configured else default_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename and str(exc.filename) != str(folder) else ""
        raise CacheDirError(
            f"step cache folder {folder} cannot be written ({exc.strerror or exc}{where}). Choose another "
            "--cache-dir (or EVALDUCK_CACHE_DIR)."
        ) from None
    return folder


@contextmanager
def _run_start() -> Iterator[None]:
    """A full disk met here undid the run's start (one transaction): the CLI says so, not `--resume`."""
    try:
        yield
    except StoreDiskError as exc:
        exc.at_start = True
        raise


def _check_outputs(dataset: Dataset, target: Target, scorers: list[Scorer]) -> None:
    if target.calls or not scorers:
        return
    missing = [f"{i.where} (item {i.item_id!r})" for i in dataset.items if i.output is None]
    if missing:
        raise DatasetError([f"{m}: missing `output` (no target given, so each item's `output` is scored)"
                            for m in missing], path=dataset.source)


def prepare_run(
    *,
    data: Any,
    scorers: Sequence[Any],
    target: Any,
    options: RunOptions,
    on_item_complete: Callable[[ItemResult], Any] | None,
    config: Mapping[str, Any] | None,
    flow_run_id: str | None,
    sink: ProgressSink | None,
    logger: logging.Logger | logging.LoggerAdapter[Any],
) -> Prepared:
    """The run's inputs loaded and checked, in the order that stops a bad run before it costs anything (no
    target or judge call, and the store untouched until every input is fine); then the run is recorded as
    started (or resumed) and its frozen plan made."""
    o = options
    dataset = load_data(data)
    built, skipped = _scorers(scorers, o, sink, logger)
    tgt = resolve_target(target, system_prompt=o.target_system_prompt, api_base=o.target_api_base,
                         timeout=o.target_timeout_s)
    _check_outputs(dataset, tgt, built)
    refuse_unpriced(built, tgt, o)  # a budget needs a price for every model the run calls (flows/run/max_cost.py)
    portable = None
    if o.runner == "dask":  # a scorer or target that cannot reach a worker stops here, named
        from evalduck.flows.engine.dispatch import portables

        portable = MappingProxyType(portables(built, tgt))  # read-only, as the plan that holds it

    folder = cache_folder(o.cache_dir)  # before the store: a run that cannot cache is not recorded
    with _run_start():
        store = Store(o.db if o.db is not None else default_db_path())
    ran = _ran(built, skipped)
    run_config = _run_config(config, built, tgt, ran)
    if o.max_cost is not None:  # `evalduck show` shows the spend against it
        run_config.setdefault("max_cost", o.max_cost)
    with _run_start(), store.held():  # the operations below in a row: one opening of the file, not one each
        run_id, todo, previous = _started(store, o, dataset, [r["id"] for r in ran], logger)
        store.start_run(run_id, o.name, dataset.source, dataset.hash, run_config, flow_run_id,
                        items=[i.store_record() for i in dataset.items],
                        directions={r["id"]: r["higher_is_better"] for r in ran})

    plan = RunPlan(run_id=run_id, items=tuple(dataset.items), scorers=tuple(built), skipped=tuple(skipped),
                   target=tgt, store=store, options=o, cache_dir=folder.resolve(), todo=todo,
                   on_item_complete=on_item_complete, portable=portable)
    return Prepared(plan=plan, dataset=dataset, previous=previous)


def _scorers(scorers: Sequence[Any], o: RunOptions, sink: ProgressSink | None,
             logger: logging.Logger | logging.LoggerAdapter[Any]) -> tuple[list[Scorer], list[Skipped]]:
    """The run's scorers, each keyed on its code as it is now (``Step.with_source``); a scorer that cannot run
    here (a judge scorer with no judge model) is skipped, and said so in the log and on the caller's terminal."""
    built, skipped = build_scorers(scorers or list(DEFAULT_SCORERS), judge_model=o.judge_model,
                                   judge_api_base=o.judge_api_base, judge_timeout=o.judge_timeout_s)
    for sk in skipped:
        logger.warning(sk.reason)
        if sink is not None:
            sink.note(sk.reason)
    return [s.with_source() for s in built], skipped


def _ran(built: list[Scorer], skipped: list[Skipped]) -> list[dict[str, Any]]:
    """What ran, whatever the config named (a prebuilt id or an import path): each scorer's own id, version and
    direction, and what it measures (flows/report/measures.py), the skipped ones too; a judge scorer's judge model
    and prompt fingerprint (what a calibration must match for the gate: flows/report/agreement.py)."""
    return [{"id": s.id, "version": s.version, "higher_is_better": s.higher_is_better, "description": s.description,
             **({"judge_model": s.judge.model if s.judge else None, "prompt_fingerprint": s.prompt_fingerprint()}
                if s.is_judge else {})}
            for s in built] + [{"id": sk.scorer_id, "version": sk.version, "higher_is_better": sk.higher_is_better,
                                "description": sk.description} for sk in skipped]


def _run_config(config: Mapping[str, Any] | None, built: list[Scorer], target: Target,
                ran: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's config as stored: what the caller gave (a deployment's EvalConfig), else the scorers and target
    it resolved to; and always what ran (``run_scorers``)."""
    run_config = dict(config or {})
    run_config.setdefault("scorers", [{"id": s.id, "version": s.version, "options": dict(s.options)} for s in built])
    run_config.setdefault("target", target.label)
    run_config["run_scorers"] = ran
    return run_config


def _started(store: Store, o: RunOptions, dataset: Dataset, scorer_ids: list[str],
             logger: logging.Logger | logging.LoggerAdapter[Any],
             ) -> tuple[str, frozenset[tuple[str, str]] | None, str | None]:
    """The run's id, the cells it computes (None: all) and the previous run it is compared with. ``resume``
    continues a stored run of the same dataset with only its missing or errored cells; a new run gets a new id
    and, with a name, the last completed run of that name to compare with."""
    if not o.resume:
        return str(uuid.uuid4()), None, store.last_completed(o.name) if o.name else None
    run_id = store.resolve_run(o.resume)
    check_resume_dataset(store, run_id, dataset.source, dataset.hash, [i.item_id for i in dataset.items])
    todo = frozenset((i.item_id, sid) for i in dataset.items for sid in scorer_ids) - store.completed_cells(run_id)
    logger.info("resuming run %s: %d cell(s) to compute", run_id, len(todo))
    return run_id, todo, None
