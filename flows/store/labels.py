"""The `labels` table: a person's label of a run's cell (`evalduck label`), one per (run, item, scorer), stored the
moment it is given (who, when, value); and the cells a labelling page shows."""

from __future__ import annotations

from typing import Any

import duckdb

from evalduck.flows.store.store import Store
from evalduck.flows.store.upsert import utcnow

__all__ = ("save_label", "forget_label", "run_labels", "cells_to_label")

_CELLS = """
SELECT s.item_id, s.score, s.status, s.reason, i.input, i.output, i.ground_truth, l.value AS label
FROM scores AS s
JOIN items AS i ON i.run_id = s.run_id AND i.item_id = s.item_id
LEFT JOIN labels AS l ON l.run_id = s.run_id AND l.item_id = s.item_id AND l.scorer_id = s.scorer_id
WHERE s.run_id = ? AND s.scorer_id = ? AND s.status = 'scored'
ORDER BY s.item_id
"""


def save_label(store: Store, run_id: str, item_id: str, scorer_id: str, value: float, labeller: str | None) -> None:
    """The person's label of a cell, replacing an earlier one of theirs or anyone's (one label per cell)."""
    def body(con: duckdb.DuckDBPyConnection) -> None:
        con.execute("DELETE FROM labels WHERE run_id = ? AND item_id = ? AND scorer_id = ?", [run_id, item_id, scorer_id])
        con.execute("INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?)", [run_id, item_id, scorer_id, value, labeller,
                                                                       utcnow()])
    store.write(body)


def forget_label(store: Store, run_id: str, item_id: str, scorer_id: str) -> None:
    """A cell's label taken back (the page's clear key): the cell is unlabelled again."""
    store.write(lambda con: con.execute("DELETE FROM labels WHERE run_id = ? AND item_id = ? AND scorer_id = ?",
                                        [run_id, item_id, scorer_id]))


def run_labels(store: Store, run_id: str, scorer_id: str) -> list[dict[str, Any]]:
    """A run's labels of a scorer's cells, by item: item_id, value, labeller, created_at."""
    return store.sql("SELECT item_id, value, labeller, created_at FROM labels WHERE run_id = ? AND scorer_id = ? "
                     "ORDER BY item_id", [run_id, scorer_id]).records()


def cells_to_label(store: Store, run_id: str, scorer_id: str) -> list[dict[str, Any]]:
    """The run's scored cells of the scorer with what a person needs to label them, and their label so far."""
    return store.sql(_CELLS, [run_id, scorer_id]).records()
