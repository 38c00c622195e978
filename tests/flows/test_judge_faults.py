"""Judge faults in a whole run, through the judge child process (the default transport): ~30% injected
faults still end with every cell scored (the reliability probe's scenario, kept small and without
sleeps), and a cell that fails stores what happened, not "status 500"."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from flow_helpers import judge_scorer, rows

from evalduck.flows import run_evals
from evalduck.flows.engine import MisconfiguredRun
from evalduck.flows.store import Store
from evalduck.scorers.testing.fake_openai import FAULTS, FakeOpenAIServer, FaultyOpenAIServer, Reply

pytestmark = pytest.mark.usefixtures("prefect_harness")
FAST = {"retry_backoff_s": 0.0, "concurrency": 8}


def _errors(db: str, run_id: str) -> dict[str, str | None]:
    result = Store(db).sql("SELECT item_id, error FROM scores WHERE run_id = ? AND status = 'error'", [run_id])
    return dict(result.rows)


def test_a_third_of_judge_requests_faulted_still_ends_with_every_cell_scored(
    workdir: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    with FaultyOpenAIServer(rate=0.3, seed=3, max_in_a_row=2) as judge:  # seed 3: all 7 kinds in 12 items
        result = run_evals(rows(12), scorers=[judge_scorer(judge, timeout=30)], retries=3, name="faults",
                           **workdir, **FAST)
        faults = sum(judge.injected.values())
        assert set(judge.injected) == set(FAULTS), judge.injected  # every kind of fault was served
        assert 0.2 <= faults / judge.request_count <= 0.4, (faults, judge.request_count)
    summary = result.summary["scorers"]["answer-relevancy-scorer"]
    assert (summary["scored"], summary["errored"]) == (12, 0)
    assert _errors(workdir["db"], result.run_id) == {}


def _refused_base() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


class _AlwaysCut(FakeOpenAIServer):
    def respond(self, req: dict[str, Any]) -> Reply:
        return Reply.truncated_body(keep=30)


@pytest.mark.parametrize("in_process", [False, True])
def test_stored_errors_say_what_happened(
    workdir: dict[str, str], monkeypatch: pytest.MonkeyPatch, in_process: bool
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    options: dict[str, Any] = {"retries": 1, "judge_process": not in_process, **workdir, **FAST}
    refused = {"id": "answer-relevancy-scorer",
               "options": {"model": "openai/fake-judge", "api_base": _refused_base(), "timeout": 30}}
    with pytest.raises(MisconfiguredRun) as stopped:  # every request would be refused: the run stops at once
        run_evals(rows(2), scorers=[refused], name="refused", **options)
    message = str(stopped.value)
    assert "connection refused (nothing is listening there); not retried" in message and "--resume" in message
    assert "status 500" not in message
    ((status, cells),) = Store(workdir["db"]).sql(
        "SELECT status, (SELECT count(*) FROM scores WHERE scores.run_id = runs.run_id) FROM runs "
        "WHERE name = 'refused'").rows
    assert status == "failed" and cells < 2  # not every cell errored one by one
    with _AlwaysCut() as judge:
        second = run_evals(rows(1, "cut"), scorers=[judge_scorer(judge, timeout=30)], name="cut", **options)
        assert judge.request_count == 2  # a broken body is transient: retried once
    (error,) = _errors(workdir["db"], second.run_id).values()
    assert error is not None and "lost the connection before the whole answer arrived (got 30 of the" in error
