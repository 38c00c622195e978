"""Reads for the report on one read-only connection: a report asks a dozen queries, and each `Store` call opens
the file anew, which costs tens of ms of CPU (docs/benchmarks-history.md, 'Eval flow, third session').
`Records` is what the query helpers take, so `evalduck show` can call them through `Store.sql` as well."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from evalduck.flows.store import Store

__all__ = ("Records", "store_records", "one_connection")

Params = Sequence[Any] | Mapping[str, Any]
Records = Callable[[str, Params], list[dict[str, Any]]]


def store_records(store: Store) -> Records:
    """Each query through `Store.sql`: one file open per query."""
    return lambda query, params: store.sql(query, params).records()


@contextmanager
def one_connection(store: Store) -> Iterator[Records]:
    """Every query on one read-only connection (`Store.reading`: the file, or the shared store's attach), held
    for the duration of the block."""
    with store.reading() as con:
        def records(query: str, params: Params) -> list[dict[str, Any]]:
            cursor = con.execute(query, params)
            columns = [d[0] for d in cursor.description or ()]
            return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]

        yield records
