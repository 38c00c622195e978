"""Dataset rows validated into DatasetItems: the fields, the text-or-messages rule, ids, and the hash of the
items; in memory or as located rows read from a file (flows/inputs/datasets/files.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from evalduck.flows.inputs.datasets.errors import DatasetError
from evalduck.flows.store.ids import item_ids
from evalduck.scorers import (
    canonical_json,
    check_context,
    check_expected_tool,
    check_text_field,
    check_tool_order,
    describe_validation,
)

__all__ = ("BadRow", "DatasetItem", "Dataset", "dataset_from_rows", "validate_rows")


@dataclass(frozen=True)
class BadRow:
    """A located row that could not be read (a JSONL line that is not JSON, a CSV cell that is not the JSON it
    must be): the reader goes on, and ``validate_rows`` lists it in file order with the rows' other problems."""

    problem: str


class _Row(BaseModel):
    """One dataset row as users write it (camelCase, as in Mastra; snake_case is accepted too)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str | int | None = None
    input: Any = Field(description="The question or chat messages (required).")
    output: Any = None
    ground_truth: Any = Field(default=None, alias="groundTruth")
    request_context: dict[str, Any] | None = Field(default=None, alias="requestContext")
    metadata: dict[str, Any] | None = None
    context: list[str] | None = Field(default=None, description="Retrieved passages (a string is one passage).")
    expected_tool: str | None = Field(default=None, alias="expectedTool")
    expected_tool_order: list[str] | None = Field(default=None, alias="expectedToolOrder")

    @field_validator("context", "expected_tool", "expected_tool_order", mode="before")
    @classmethod
    def _run_fields(cls, value: Any, info: ValidationInfo) -> Any:
        """The scorers' rules for these fields (evalduck.scorers.ScorerInput checks runs with the same), named as the
        dataset spells them."""
        field_name = info.field_name or ""
        check = {"context": check_context, "expected_tool": check_expected_tool,
                 "expected_tool_order": check_tool_order}[field_name]
        return check(value, cls.model_fields[field_name].alias or field_name)

    @field_validator("input", "output", "ground_truth")
    @classmethod
    def _text_or_messages(cls, value: Any, info: ValidationInfo) -> Any:
        """The scorers' rule (a string, a chat message or a list of them), named as the dataset spells the
        field; one message becomes a list of one, so targets and the store see one shape."""
        field_name = info.field_name or ""
        check_text_field(value, cls.model_fields[field_name].alias or field_name)
        if value is None or isinstance(value, str):
            return value
        return [value] if isinstance(value, Mapping) else list(value)


_FIELDS = tuple(info.alias or name for name, info in _Row.model_fields.items())  # as users write them


@dataclass(frozen=True, slots=True)
class DatasetItem:
    """A validated row. ``where`` locates it in its source ("data.jsonl line 3", "row 7")."""

    item_id: str
    input: Any
    output: Any = None
    ground_truth: Any = None
    request_context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    where: str = ""
    context: list[str] | None = None
    expected_tool: str | None = None
    expected_tool_order: list[str] | None = None

    def store_record(self) -> dict[str, Any]:
        """The row as ``Store.write_items`` takes it."""
        return {
            "item_id": self.item_id,
            "input": self.input,
            "output": self.output,
            "ground_truth": self.ground_truth,
            "request_context": self.request_context,
            "metadata": self.metadata,
            "context": self.context,
            "expected_tool": self.expected_tool,
            "expected_tool_order": self.expected_tool_order,
        }

    def to_row(self) -> dict[str, Any]:
        """The row in dataset form (camelCase), e.g. to stage it to a JSONL file."""
        row: dict[str, Any] = {"id": self.item_id, "input": self.input}
        for key, value in (("output", self.output), ("groundTruth", self.ground_truth),
                           ("requestContext", self.request_context), ("metadata", self.metadata),
                           ("context", self.context), ("expectedTool", self.expected_tool),
                           ("expectedToolOrder", self.expected_tool_order)):
            if value is not None:
                row[key] = value
        return row


@dataclass(frozen=True)
class Dataset:
    """Validated items plus where they came from and a content hash (stored with the run)."""

    items: list[DatasetItem]
    source: str
    hash: str
    problems: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.items)


def validate_rows(located: Sequence[tuple[str, Any]], source: str, *, path: str | None) -> Dataset:
    """Validate every row, collecting every problem, then give ids; raise DatasetError if any row is bad."""
    problems: list[str] = []
    rows: list[tuple[str, _Row]] = []
    for where, raw in located:
        if isinstance(raw, BadRow):
            problems.append(f"{where}: {raw.problem}")
            continue
        if not isinstance(raw, Mapping):
            problems.append(f"{where}: a row must be an object, got {type(raw).__name__}")
            continue
        label = f"{where} (item {raw['id']!r})" if raw.get("id") is not None else where
        if raw.get("input") is None:
            problems.append(f"{label}: missing `input`")
            continue
        try:
            rows.append((where, _Row.model_validate(raw)))
        except ValidationError as exc:
            problems.append(f"{label}: {describe_validation(exc, noun='field', known=_FIELDS)}")
    if problems:
        raise DatasetError(problems, path=path)
    if not rows:
        raise DatasetError([f"{source}: the dataset has no rows"], path=path)
    dumped = [r.model_dump(by_alias=True, exclude_none=True) for _, r in rows]
    ids = item_ids(dumped)
    items = [
        DatasetItem(
            item_id=iid,
            input=r.input,
            output=r.output,
            ground_truth=r.ground_truth,
            request_context=r.request_context,
            metadata=r.metadata,
            where=where,
            context=r.context,
            expected_tool=r.expected_tool,
            expected_tool_order=r.expected_tool_order,
        )
        for iid, (where, r) in zip(ids, rows, strict=True)
    ]
    digest = hashlib.sha256()
    for row in dumped:
        digest.update(canonical_json(row, default=str).encode("utf-8"))
        digest.update(b"\n")
    return Dataset(items=items, source=source, hash=digest.hexdigest())


def dataset_from_rows(rows: Sequence[Mapping[str, Any]], source: str = "<memory>") -> Dataset:
    """Validate rows given in memory; problems name the row's position (1-based) and id."""
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise DatasetError([f"data must be a list of rows or a dataset path, got {type(rows).__name__}"])
    return validate_rows([(f"row {i}", row) for i, row in enumerate(rows, 1)], source, path=None)
