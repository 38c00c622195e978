"""What a CLI run checks before Prefect starts, in a second: what EvalConfig cannot see (a scorer given twice,
an import path that names no scorer, the dataset and its rows, the target, the run to resume), and whether it
will call a model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from evalduck.flows.cli import db_path, fail
from evalduck.flows.cli.errors import label, value_error

if TYPE_CHECKING:
    from evalduck.flows.config import EvalConfig
    from evalduck.flows.inputs.datasets import Dataset

__all__ = ("check_usage", "calls_models")


def check_usage(ctx: typer.Context, config: EvalConfig) -> None:
    """What EvalConfig cannot see: a scorer given twice, the dataset file and its rows, whether the target
    resolves, and whether the run to resume is in the database. Usage errors exit 2; bad rows exit 1."""
    from evalduck.flows.config import is_import_path
    from evalduck.flows.inputs.datasets import DatasetPathError, load_dataset
    from evalduck.flows.inputs.targets import TargetError, resolve_target
    from evalduck.scorers import locate_scorer

    ids = [s.id for s in config.scorers]
    twice = next((i for n, i in enumerate(ids) if i in ids[:n]), None)
    if twice is not None:
        fail(value_error(label(ctx, "scorer"), twice, "given twice (a run scores each item once per scorer)"), ctx)
    for path in filter(is_import_path, ids):
        try:
            locate_scorer(path)
        except ValueError as exc:
            fail(value_error(label(ctx, "scorer"), path, str(exc).removeprefix(f"scorer {path!r}: ")), ctx)
    try:
        dataset = load_dataset(config.dataset)
    except DatasetPathError as exc:  # other DatasetErrors are the data's fault: exit 1, every bad row (errors.py)
        fail(value_error(label(ctx, "dataset"), config.dataset, exc.problem), ctx)
    try:
        resolve_target(config.target, system_prompt=config.target_system_prompt, api_base=config.target_api_base)
    except TargetError as exc:
        fail(value_error(label(ctx, "target"), exc.spec, exc.problem), ctx)
    if config.resume:
        _check_resume(ctx, db_path(ctx), config.resume, dataset)


def _check_resume(ctx: typer.Context, db: Path, ref: str, dataset: Dataset) -> None:
    from evalduck.flows.store import (
        DatasetMismatchError,
        Store,
        UnknownRunError,
        check_resume_dataset,
    )

    option = label(ctx, "resume")
    if not db.exists():
        fail(value_error(option, ref, f"no run to resume: {db} does not exist yet"), ctx)
    try:
        store = Store(db)
        check_resume_dataset(store, store.resolve_run(ref), dataset.source, dataset.hash,
                             [i.item_id for i in dataset.items])
    except (UnknownRunError, DatasetMismatchError) as exc:  # other StoreErrors (not a DuckDB file, a newer
        fail(f"{option}: {exc}", ctx)  # schema, locked) end the command as the run itself would (errors.py)


def calls_models(config: EvalConfig) -> bool:
    """Whether the run will send judge or model requests: a 'model:' target, or a judge step among the
    scorers the registry builds (it skips a judge scorer without a model), as the flow decides it."""
    from evalduck.flows.inputs.registry import build_scorers

    try:
        built, _ = build_scorers(config.scorers, judge_model=config.judge_model, judge_api_base=config.judge_api_base)
    except ValueError:  # bad scorer options: the run reports them, as it always has
        return False
    return (config.target or "").startswith("model:") or any(step.is_judge for s in built for step in s.steps)
