"""`check_resume_dataset`: a run is resumed only with the rows it was made from."""

from __future__ import annotations

import pytest

from evalduck.flows.store import DatasetMismatchError, Store, check_resume_dataset


@pytest.fixture
def run(store: Store) -> Store:
    store.start_run("r1", "dupes 2", "dupes_noid.jsonl", "0944e78e" + "0" * 56, {},
                    items=[{"item_id": "a", "input": "q"}, {"item_id": "b", "input": "q2"}])
    store.finish_run("r1", "failed")
    return store


def test_the_same_rows_resume_even_from_another_path(run: Store) -> None:
    check_resume_dataset(run, "r1", "moved/dupes_noid.jsonl", "0944e78e" + "0" * 56, ["a", "b"])


def test_other_rows_are_refused_naming_both_datasets_and_what_to_do(run: Store) -> None:
    with pytest.raises(DatasetMismatchError) as info:
        check_resume_dataset(run, "dupes 2", "dupes.jsonl", "5a1b" * 16, ["a", "b", "z"])
    message = str(info.value)
    for text in ("run r1 (dupes 2) was made from dupes_noid.jsonl (rows hash 0944e78e0000)",
                 "dupes.jsonl (hash 5a1b5a1b5a1b) has 1 item(s) not in the run and lacks 0 of its 2",
                 "resume it with dupes_noid.jsonl as it was", "without --resume", "--name 'dupes 2'"):
        assert text in message, message


def test_same_ids_with_other_content_are_refused_too(run: Store) -> None:
    with pytest.raises(DatasetMismatchError, match="the same item ids with other content or in another order"):
        check_resume_dataset(run, "r1", "dupes_noid.jsonl", "ff" * 32, ["b", "a"])


def test_a_run_recorded_without_a_hash_is_not_checked(store: Store) -> None:
    store.start_run("old", None, "d.jsonl", None, {})
    check_resume_dataset(store, "old", "other.jsonl", "ab" * 32, ["x"])
