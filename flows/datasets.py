"""Loading and validating datasets (JSONL, JSON, CSV, Parquet, or rows in memory) into DatasetItems.

The whole dataset is validated before a run starts, so a bad row fails the run before any target or judge
call is made, with an error that names the file and line (or the row's position in memory).
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from scorers import canonical_json, check_text_field, describe_validation

from flows.store.ids import item_ids

__all__ = (
    "DatasetError", "DatasetPathError", "DatasetItem", "Dataset", "load_dataset", "dataset_from_rows", "SUFFIXES",
)

SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet")
_MAX_REPORTED = 10


class DatasetError(ValueError):
    """A dataset that cannot be used: every problem found, each naming its file and line (or row)."""

    def __init__(self, problems: Sequence[str], *, path: str | None = None) -> None:
        self.problems = list(problems)
        self.path = path
        shown = self.problems[:_MAX_REPORTED]
        more = len(self.problems) - len(shown)
        text = "\n".join(shown) + (f"\n... and {more} more problem(s)" if more > 0 else "")
        super().__init__(text)


class DatasetPathError(DatasetError):
    """A path that names no dataset file (missing, a folder, an unknown format): the caller's mistake, not the
    data's. ``problem`` is the message without the path."""

    def __init__(self, path: Path, problem: str) -> None:
        self.problem = problem
        super().__init__([f"{path}: {problem}"], path=str(path))


class _Row(BaseModel):
    """One dataset row as users write it (camelCase, as in Mastra; snake_case is accepted too)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str | int | None = None
    input: Any = Field(description="The question or chat messages (required).")
    output: Any = None
    ground_truth: Any = Field(default=None, alias="groundTruth")
    request_context: dict[str, Any] | None = Field(default=None, alias="requestContext")
    metadata: dict[str, Any] | None = None

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

    def store_record(self) -> dict[str, Any]:
        """The row as ``Store.write_items`` takes it."""
        return {
            "item_id": self.item_id,
            "input": self.input,
            "output": self.output,
            "ground_truth": self.ground_truth,
            "request_context": self.request_context,
            "metadata": self.metadata,
        }

    def to_row(self) -> dict[str, Any]:
        """The row in dataset form (camelCase), e.g. to stage it to a JSONL file."""
        row: dict[str, Any] = {"id": self.item_id, "input": self.input}
        for key, value in (("output", self.output), ("groundTruth", self.ground_truth),
                           ("requestContext", self.request_context), ("metadata", self.metadata)):
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


def _validate(located: Sequence[tuple[str, Any]], source: str, *, path: str | None) -> Dataset:
    """Validate every row, collecting every problem, then give ids; raise DatasetError if any row is bad."""
    problems: list[str] = []
    rows: list[tuple[str, _Row]] = []
    for where, raw in located:
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
        )
        for iid, (where, r) in zip(ids, rows)
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
    return _validate([(f"row {i}", row) for i, row in enumerate(rows, 1)], source, path=None)


# Text formats are read as UTF-8, with or without the byte order mark Excel's "CSV UTF-8" (and Notepad) write.
_ENCODING = "utf-8-sig"


def _save_as_utf8(path: Path) -> str:
    excel = ' (in Excel: Save As "CSV UTF-8")' if path.suffix.lower() == ".csv" else ""
    return (f"save the file as UTF-8{excel}, or convert it, e.g. "
            f"`iconv -f windows-1252 -t utf-8 {path.name} > {path.stem}-utf8{path.suffix}`")


def _not_utf8(path: Path) -> DatasetError:
    """Where a file that failed to decode stops being UTF-8: line, column and byte offset, and the remedy.
    (Found by a second, binary pass: a text reader's error position is relative to its buffer.)"""
    offset = 0
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            skip = len(codecs.BOM_UTF8) if lineno == 1 and raw.startswith(codecs.BOM_UTF8) else 0
            try:
                raw[skip:].decode("utf-8")
            except UnicodeDecodeError as exc:
                column = len(raw[skip:skip + exc.start].decode("utf-8")) + 1
                at = offset + skip + exc.start
                return DatasetError([f"{path} line {lineno}: not valid UTF-8 (byte 0x{raw[skip + exc.start]:02x} at "
                                     f"column {column}, byte offset {at} of the file); {_save_as_utf8(path)}"],
                                    path=str(path))
            offset += len(raw)
    return DatasetError([f"{path}: not valid UTF-8; {_save_as_utf8(path)}"], path=str(path))


def _jsonl_rows(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open(encoding=_ENCODING) as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:  # without its line break, so an error at the end of the line has that line's column
                    yield f"{path} line {lineno}", json.loads(line.rstrip("\r\n"))
                except json.JSONDecodeError as exc:
                    raise DatasetError([f"{path} line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})"],
                                       path=str(path)) from None
        except UnicodeDecodeError:
            raise _not_utf8(path) from None


def _json_rows(path: Path) -> list[tuple[str, Any]]:
    """Rows of a JSON array (or of an object's "items"/"data" array), each located by its starting line."""
    try:
        text = path.read_text(encoding=_ENCODING)
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError([f"{path} line {exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})"],
                           path=str(path)) from None
    if isinstance(doc, Mapping):
        key = next((k for k in ("items", "data", "rows") if isinstance(doc.get(k), list)), None)
        if key is None:
            raise DatasetError([f"{path}: expected a JSON array of rows (or an object with an `items` array)"],
                               path=str(path))
        doc = doc[key]
        start = text.index("[", text.index(f'"{key}"'))
    elif isinstance(doc, list):
        start = text.index("[")
    else:
        raise DatasetError([f"{path}: expected a JSON array of rows, got {type(doc).__name__}"], path=str(path))
    # Walk the array once more with raw_decode to learn where each element starts (for line numbers).
    decoder = json.JSONDecoder()
    located: list[tuple[str, Any]] = []
    pos, line, counted = start + 1, 1 + text.count("\n", 0, start + 1), start + 1
    for _ in doc:
        while text[pos] in " \t\r\n,":
            pos += 1
        line += text.count("\n", counted, pos)
        counted = pos
        value, pos = decoder.raw_decode(text, pos)
        located.append((f"{path} line {line}", value))
    return located


def _csv_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """CSV rows, each located by the file line it starts on (a quoted cell may span lines): empty cells are
    absent; requestContext/metadata cells hold JSON objects."""
    with path.open(encoding=_ENCODING, newline="") as fh:
        reader = csv.reader(fh)
        header: list[str] | None = None
        start = 1
        try:
            for cells in reader:
                where, start = f"{path} line {start}", reader.line_num + 1
                if not cells:  # a blank line
                    continue
                if header is None:
                    header = cells
                    if "input" not in header:
                        raise DatasetError([f"{where}: no `input` column (the columns are "
                                            f"{', '.join(map(repr, header))}); name the question column `input`"],
                                           path=str(path))
                    continue
                if len(cells) > len(header):
                    raise DatasetError([f"{where}: more cells than header columns"], path=str(path))
                yield where, _csv_row(where, header, cells, path)
        except UnicodeDecodeError:
            raise _not_utf8(path) from None


def _csv_row(where: str, header: Sequence[str], cells: Sequence[str], path: Path) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for key, value in zip(header, cells):
        if value == "":
            continue
        if key in ("requestContext", "request_context", "metadata"):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise DatasetError([f"{where}: `{key}` must be a JSON object, got {value!r:.60}"],
                                   path=str(path)) from None
        row[key] = value
    return row


def _parquet_rows(path: Path) -> list[tuple[str, Any]]:
    import duckdb

    con = duckdb.connect()
    try:
        cur = con.execute("SELECT * FROM read_parquet(?)", [str(path)])
        names = [d[0] for d in cur.description]
        return [
            (f"{path} row {i}", {k: v for k, v in zip(names, values) if v is not None})
            for i, values in enumerate(cur.fetchall(), 1)
        ]
    except duckdb.Error as exc:
        raise DatasetError([f"{path}: cannot read Parquet ({exc})"], path=str(path)) from None
    finally:
        con.close()


def load_dataset(path: str | Path) -> Dataset:
    """Read and validate a dataset file (by suffix: .jsonl/.ndjson, .json, .csv, .parquet).

    Raises:
        DatasetPathError: a missing file, a folder, or an unknown format.
        DatasetError: bad rows (all of them, with file and line).
    """
    path = Path(path)
    if path.is_dir():
        raise DatasetPathError(path, f"is a folder, not a dataset file ({', '.join(SUFFIXES)})")
    if not path.is_file():
        raise DatasetPathError(path, "no such dataset file")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        known = f"unknown dataset format {suffix!r}" if suffix else "no extension to tell the dataset format by"
        raise DatasetPathError(path, f"{known} (use one of {', '.join(SUFFIXES)})")
    if suffix in (".jsonl", ".ndjson"):
        located: Sequence[tuple[str, Any]] = list(_jsonl_rows(path))
    elif suffix == ".json":
        located = _json_rows(path)
    elif suffix == ".csv":
        located = list(_csv_rows(path))
    else:
        located = _parquet_rows(path)
    return _validate(located, str(path), path=str(path))
