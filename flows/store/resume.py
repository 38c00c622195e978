"""The rule for `--resume RUN`: a run is resumed only with the rows it was made from.

Resuming with other rows would add their items to the old run, which would still name the old file and
its hash: one run mixing two datasets, compared as if it were one. So the dataset's content hash must be
the run's (the same rows, in the same order; the file may have moved or been renamed). A run recorded
without a hash (schema version 1) cannot be checked and is resumed as before.
"""

from __future__ import annotations

import shlex

from evalduck.flows.store.errors import StoreError
from evalduck.flows.store.store import Store

__all__ = ("DatasetMismatchError", "check_resume_dataset")


class DatasetMismatchError(StoreError, ValueError):
    """`--resume` with a dataset whose rows are not the run's."""


def _short(digest: str) -> str:
    return digest[:12]


def check_resume_dataset(store: Store, run_ref: str, dataset: str, dataset_hash: str, item_ids: list[str]) -> None:
    """Raise DatasetMismatchError, naming both datasets and what to do, unless `dataset` (its source, content
    hash and item ids) holds the rows run `run_ref` was made from."""
    run = store.run_record(run_ref)
    if run.dataset_hash is None or run.dataset_hash == dataset_hash:
        return
    stored = {iid for (iid,) in store.sql("SELECT item_id FROM items WHERE run_id = ?", [run.run_id]).rows}
    given = set(item_ids)
    new, missing = len(given - stored), len(stored - given)
    if new or missing:
        differs = f"{new} item(s) not in the run and lacks {missing} of its {len(stored)}"
    else:
        differs = "the same item ids with other content or in another order"
    source = run.dataset or "an unnamed dataset"
    label = f"run {run.run_id}" + (f" ({run.name})" if run.name else "")
    raise DatasetMismatchError(
        f"{label} was made from {source} (rows hash {_short(run.dataset_hash)}); {dataset} (hash "
        f"{_short(dataset_hash)}) has {differs}. Resuming would mix two datasets in one run: resume it with "
        f"{source} as it was, or start a new run without --resume"
        + (f" (--name {shlex.quote(run.name)} compares it with this one)." if run.name else ".")
    )
