"""Item ids: the key that pairs an item across runs, so it must not depend on anything a run produces."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from evalduck.scorers import canonical_json

__all__ = ("item_id", "item_ids")

# What identifies an item when the dataset gives no id: what the item asks and expects, never the
# output (two systems' precomputed outputs for the same questions must pair up) nor free-form metadata.
_HASHED_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("input", ("input",)),
    ("groundTruth", ("groundTruth", "ground_truth")),
    ("requestContext", ("requestContext", "request_context")),
)


def _field(row: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        if name in row:
            return row[name]
    return None


def item_id(row: Mapping[str, Any]) -> str:
    """The row's `id` as a string when present (and not None), else `h:` + 16 hex of a content hash.

    The hash is sha256 over the canonical JSON of `{"input", "groundTruth", "requestContext"}`
    (snake_case spellings accepted), so the same data gives the same id in every run.
    """
    given = row.get("id")
    if given is not None:
        return str(given)
    content = {key: _field(row, names) for key, names in _HASHED_FIELDS}
    return "h:" + hashlib.sha256(canonical_json(content, default=str).encode("utf-8")).hexdigest()[:16]


def item_ids(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """`item_id` for each row, with repeats made unique by a `#2`, `#3`... suffix in dataset order.

    Two identical rows without ids would otherwise share one id and overwrite each other's scores;
    the suffix keeps them apart and stays stable as long as the dataset's order does.
    """
    seen: dict[str, int] = {}
    out: list[str] = []
    for row in rows:
        base = item_id(row)
        count = seen.get(base, 0) + 1
        seen[base] = count
        out.append(base if count == 1 else f"{base}#{count}")
    return out
