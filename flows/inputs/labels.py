"""Human labels for a judge scorer: a file of rows, each naming an item (its `id`, or its `input` and `output`)
and the `label` a person gave it (a score in the scorer's range, or a category). Read as datasets are (JSONL,
JSON, CSV, Parquet), with every bad row named by file and line. A row may carry the item's own fields too
(`input`, `output`, `groundTruth`, `context`...): then the labels file is also the dataset the judge scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalduck.flows.inputs.datasets import Dataset, DatasetError, located_rows
from evalduck.flows.inputs.datasets.rows import validate_rows
from evalduck.scorers import canonical_json

__all__ = ("Label", "Labels", "load_labels", "item_key")

_ITEM_FIELDS = ("input", "output", "groundTruth", "ground_truth", "requestContext", "request_context", "context",
                "expectedTool", "expected_tool", "expectedToolOrder", "expected_tool_order")


def item_key(input_: Any, output: Any) -> str:
    """How a label without an id finds its item: its input and output, as canonical JSON."""
    return canonical_json([input_, output], default=str)


@dataclass(frozen=True)
class Label:
    """One human label: the item it is for (``item_id``, else ``key`` of its input and output) and its value."""

    where: str  # "labels.jsonl line 3"
    value: float | str
    item_id: str | None
    key: str | None
    reason: str | None = None


@dataclass(frozen=True)
class Labels:
    """A labels file: its labels, and the items they carry as a dataset when every row carries an input."""

    path: str
    labels: tuple[Label, ...]
    dataset: Dataset | None

    @property
    def numeric(self) -> bool:
        return all(isinstance(label.value, float) for label in self.labels)

    def scored(self, categories: Mapping[str, float]) -> Labels:
        """These labels with each category replaced by its score in ``categories`` (case-insensitive), so they
        compare with the judge's scores.

        Raises:
            DatasetError: a category ``categories`` does not name, with its file and line.
        """
        table = {name.strip().lower(): value for name, value in categories.items()}
        unknown = [f"{lab.where}: category {lab.value!r} has no score: give it one with --category "
                   f"{lab.value}=SCORE" for lab in self.labels
                   if isinstance(lab.value, str) and lab.value.strip().lower() not in table]
        if unknown:
            raise DatasetError(unknown, path=self.path)
        mapped = tuple(replace(lab, value=table[lab.value.strip().lower()]) if isinstance(lab.value, str) else lab
                       for lab in self.labels)
        return replace(self, labels=mapped)


def _value(raw: Any) -> float | str:
    """A label as given: a number (a score), else a non-empty category; ValueError otherwise."""
    if isinstance(raw, bool) or raw is None:
        raise ValueError(f"`label` must be a number or a category, got {raw!r}")
    if isinstance(raw, (int, float)):
        return float(raw)
    text = str(raw).strip()
    if not text:
        raise ValueError("`label` is empty")
    try:
        return float(text)
    except ValueError:
        return text


def _label(where: str, row: Mapping[str, Any]) -> Label:
    if "label" not in row:
        raise ValueError("missing `label`")
    value = _value(row["label"])
    item_id = None if row.get("id") is None else str(row["id"])
    if item_id is None and ("input" not in row or "output" not in row):
        raise ValueError("needs `id`, or `input` and `output`, to name the item it labels")
    meta = row.get("metadata")
    reason = meta.get("reason") if isinstance(meta, Mapping) else None
    return Label(where=where, value=value, item_id=item_id, reason=reason,
                 key=item_key(row.get("input"), row.get("output")) if "input" in row else None)


def load_labels(path: str | Path) -> Labels:
    """Read and check a labels file; every problem at once, each with its file and line.

    Raises:
        DatasetPathError: a missing file, a folder, or an unknown format.
        DatasetError: bad rows, or the same item labelled twice.
    """
    located = located_rows(path, needed="label")
    problems: list[str] = []
    labels: list[Label] = []
    for where, raw in located:
        if not isinstance(raw, Mapping):
            problems.append(f"{where}: a row must be an object with `label`, got {type(raw).__name__}")
            continue
        try:
            labels.append(_label(where, raw))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    seen: dict[str, str] = {}
    for label in labels:
        name = label.item_id or label.key or ""
        if name in seen:
            problems.append(f"{label.where}: item {label.item_id or 'with this input and output'} is labelled "
                            f"already at {seen[name]}: keep one label per item")
        seen.setdefault(name, label.where)
    if not labels and not problems:
        problems.append(f"{path}: the labels file has no rows")
    if problems:
        raise DatasetError(problems, path=str(path))
    return Labels(path=str(path), labels=tuple(labels), dataset=_as_dataset(located, str(path)))


def _as_dataset(located: Sequence[tuple[str, Any]], source: str) -> Dataset | None:
    """The items the rows carry (their label and its reason left out), when every row has an input."""
    if not all(isinstance(raw, Mapping) and raw.get("input") is not None for _, raw in located):
        return None
    rows = [(where, {k: v for k, v in raw.items() if k in (*_ITEM_FIELDS, "id")}) for where, raw in located]
    return validate_rows(rows, source, path=source)
