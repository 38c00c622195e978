"""Dataset files read into located rows (``("data.csv line 3", {...})``): JSONL, JSON, CSV and Parquet, text as
UTF-8 with or without a BOM, every row named by the file line it starts on."""

from __future__ import annotations

import codecs
import csv
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalduck.flows.inputs.datasets.errors import DatasetError, DatasetPathError
from evalduck.flows.inputs.datasets.rows import BadRow, Dataset, validate_rows

__all__ = ("SUFFIXES", "load_dataset", "located_rows")

SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet")


# Text formats are read as UTF-8, with or without the byte order mark Excel's "CSV UTF-8" (and Notepad) write.
_ENCODING = "utf-8-sig"


def _save_as_utf8(path: Path) -> str:
    excel = ' (in Excel: Save As "CSV UTF-8")' if path.suffix.lower() == ".csv" else ""
    return (f"save the file as UTF-8{excel}, or convert it, e.g. "
            f"`iconv -f windows-1252 -t utf-8 {path.name} > {path.stem}-utf8{path.suffix}`")


def _not_utf8(path: Path) -> DatasetError:
    """Where a file that failed to decode stops being UTF-8: line, column and byte offset, and the remedy.
    It is found by a second, binary pass: a text reader's error position is relative to its buffer."""
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
                    row: Any = json.loads(line.rstrip("\r\n"))
                except json.JSONDecodeError as exc:  # every bad line is listed, not only the first
                    row = BadRow(f"not valid JSON ({exc.msg} at column {exc.colno})")
                yield f"{path} line {lineno}", row
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


def _csv_rows(path: Path, needed: str = "input") -> Iterator[tuple[str, Any]]:
    """CSV rows, each located by the file line it starts on (a quoted cell may span lines): empty cells are
    absent; requestContext/metadata cells hold JSON objects, context/expectedToolOrder cells JSON arrays (a
    context cell of plain text is one passage). A header without the ``needed`` column is the file's error."""
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
                    if needed not in header:
                        what = "the question column" if needed == "input" else "that column"
                        raise DatasetError([f"{where}: no `{needed}` column (the columns are "
                                            f"{', '.join(map(repr, header))}); name {what} `{needed}`"],
                                           path=str(path))
                    continue
                yield where, (BadRow("more cells than header columns") if len(cells) > len(header)
                              else _csv_row(header, cells))
        except UnicodeDecodeError:
            raise _not_utf8(path) from None


_JSON_OBJECT_CELLS = frozenset({"requestContext", "request_context", "metadata"})
# A cell of these that starts with `[` is a JSON array (context: passages; a plain text cell is one passage).
_JSON_LIST_CELLS = frozenset({"context", "expectedToolOrder", "expected_tool_order"})


def _csv_row(header: Sequence[str], cells: Sequence[str]) -> dict[str, Any] | BadRow:
    row: dict[str, Any] = {}
    for key, value in zip(header, cells, strict=False):  # fewer cells: the rest are empty (more: refused above)
        if value == "":
            continue
        is_list = key in _JSON_LIST_CELLS and value.lstrip().startswith("[")
        if key in _JSON_OBJECT_CELLS or is_list:
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                what = "a JSON array of strings" if is_list else "a JSON object"
                return BadRow(f"`{key}` must be {what}, got {value!r:.60}")
        row[key] = value
    return row


def _parquet_rows(path: Path) -> list[tuple[str, Any]]:
    import duckdb

    con = duckdb.connect()
    try:
        cur = con.execute("SELECT * FROM read_parquet(?)", [str(path)])
        names = [d[0] for d in cur.description]
        return [
            (f"{path} row {i}", {k: v for k, v in zip(names, values, strict=True) if v is not None})
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
    return validate_rows(located_rows(path), str(path), path=str(path))


def located_rows(path: str | Path, needed: str = "input") -> Sequence[tuple[str, Any]]:
    """A dataset-like file's rows, each with where it is ("data.jsonl line 3"), unvalidated: a dataset's, and
    a labels file's (flows/inputs/labels.py), read the same way; ``needed``, the column a CSV must have.

    Raises:
        DatasetPathError: a missing file, a folder, or an unknown format.
        DatasetError: a file that cannot be read as its format.
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
        located = list(_csv_rows(path, needed))
    else:
        located = _parquet_rows(path)
    return located
