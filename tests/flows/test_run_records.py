"""What a run records: a resume only with the rows it was made from."""

from __future__ import annotations

import pytest

from flows import run_evals
from flows.store import DatasetMismatchError, Store

from flow_helpers import rows

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_resume_with_other_rows_is_refused_and_adds_nothing(workdir: dict[str, str]) -> None:
    first = run_evals(rows(2), scorers=["tone-scorer"], name="two", **workdir)
    with pytest.raises(DatasetMismatchError, match=rf"run {first.run_id} \(two\) was made from <memory>"):
        run_evals(rows(3), scorers=["tone-scorer"], resume=first.run_id, **workdir)
    store = Store(workdir["db"])
    assert store.sql("SELECT count(*) FROM items").rows == [(2,)]
    assert store.run_record(first.run_id).status == "completed"
    again = run_evals(rows(2), scorers=["tone-scorer"], resume="two", **workdir)  # the same rows resume
    assert again.run_id == first.run_id
