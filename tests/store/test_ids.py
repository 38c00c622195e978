"""Item ids: a dataset's own id wins, otherwise a content hash that ignores the output, numbered on repeats."""

from __future__ import annotations

from evalduck.flows.store.ids import item_id, item_ids


def test_dataset_id_wins_and_is_a_string() -> None:
    assert item_id({"id": 7, "input": "q"}) == "7"
    assert item_id({"id": "abc", "input": "q"}) == "abc"


def test_content_hash_is_stable_and_ignores_output_and_key_spelling() -> None:
    a = item_id({"input": "q", "groundTruth": "g", "requestContext": {"b": 1, "a": 2}, "output": "x"})
    b = item_id({"input": "q", "ground_truth": "g", "request_context": {"a": 2, "b": 1}, "output": "y"})
    assert a == b
    assert a.startswith("h:") and len(a) == 18
    assert item_id({"input": "q", "id": None}) == item_id({"input": "q"})


def test_content_hash_changes_with_content() -> None:
    assert item_id({"input": "q"}) != item_id({"input": "q", "groundTruth": ""})
    assert item_id({"input": "q"}) != item_id({"input": "Q"})


def test_repeated_rows_get_numbered() -> None:
    rows = [{"input": "q"}, {"input": "r"}, {"input": "q"}, {"input": "q", "id": 5}]
    ids = item_ids(rows)
    assert ids[0] == item_id(rows[0]) and ids[2] == ids[0] + "#2"
    assert ids[3] == "5"
    assert len(set(ids)) == 4
