"""Transient judge errors are retried until every item is scored; a cell that keeps failing ends as `error`
with its message while the rest of the run is scored; auth errors are never retried; resume recomputes
only what is missing or errored."""

from __future__ import annotations

from typing import Any

import pytest
from flow_helpers import judge_scorer, rows

from evalduck.flows import run_evals
from evalduck.flows.engine import FailFast, MisconfiguredRun
from evalduck.flows.store import Store
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, Reply, default_responder

pytestmark = pytest.mark.usefixtures("prefect_harness")
FAST = {"retry_backoff_s": 0.05, "concurrency": 2}


def _cells(db: str, run_id: str, scorer: str = "answer-relevancy-scorer") -> dict[str, tuple[str, str | None]]:
    result = Store(db).sql(
        "SELECT item_id, status, error FROM scores WHERE run_id = ? AND scorer_id = ?", [run_id, scorer]
    )
    return {item: (status, error) for item, status, error in result.rows}


def test_transient_faults_are_retried_until_every_item_is_scored(
    judge: FakeOpenAIServer, workdir: dict[str, str]
) -> None:
    judge.script(
        Reply.rate_limit(retry_after=0.1),
        Reply.server_error(500),
        Reply.hang(3.0),  # past the 1 s client timeout
        Reply.malformed_json(),
        Reply.malformed_json(),  # the repair request fails too: InvalidJudgeAnswer, retried as a whole
    )
    result = run_evals(rows(3), scorers=[judge_scorer(judge, timeout=1)], **workdir, **FAST)
    assert judge.pending_replies == 0  # every fault was served
    assert result.summary["scorers"]["answer-relevancy-scorer"] == {
        **result.summary["scorers"]["answer-relevancy-scorer"], "scored": 3, "errored": 0
    }
    assert set(_cells(workdir["db"], result.run_id).values()) == {("scored", None)}
    # 3 items x 3 judge steps, plus one request per fault answered (5 faults)
    assert judge.request_count == 9 + 5


class _Poisoned(FakeOpenAIServer):
    """Answers 503 to every request about an item whose text says POISON, 400 (a request this judge refuses,
    e.g. one too long for it) for REFUSED, and 401 (a bad key: every request would get it) for AUTH."""

    def __init__(self) -> None:
        super().__init__()
        self.healed = False

    def respond(self, req: dict[str, Any]) -> Reply:
        text = str(req.get("messages"))
        if not self.healed and "POISON" in text:
            return Reply.server_error(503)
        if not self.healed and "REFUSED" in text:
            return Reply.http_error(400, "This model's maximum context length is exceeded", "context_length_exceeded")
        if not self.healed and "AUTH" in text:
            return Reply.http_error(401, "Incorrect API key provided", "invalid_api_key")
        return Reply.text(default_responder(req))


def test_failing_item_is_an_error_the_run_goes_on_and_resume_fixes_it(
    workdir: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    data = rows(4)
    data[1]["output"] = "POISON answer."
    data[2]["output"] = "REFUSED answer."
    with _Poisoned() as judge:
        seen: list[str] = []
        first = run_evals(data, scorers=[judge_scorer(judge), "tone-scorer"], retries=3, name="poison",
                          on_item_complete=lambda r: seen.append(r.item_id), **workdir, **FAST)
        assert sorted(seen) == sorted(r["id"] for r in data)
        summary = first.summary["scorers"]["answer-relevancy-scorer"]
        assert (summary["scored"], summary["errored"]) == (2, 2)
        assert first.summary["scorers"]["tone-scorer"]["scored"] == 4
        cells = _cells(workdir["db"], first.run_id)
        assert cells["q-1"][0] == "error" and "503" in (cells["q-1"][1] or "")
        assert cells["q-2"][0] == "error" and "400" in (cells["q-2"][1] or "")
        poison = [r for r in judge.requests if "POISON" in str(r["messages"])]
        auth = [r for r in judge.requests if "REFUSED" in str(r["messages"])]
        assert len(poison) == 1 + 3  # first try + 3 retries of a transient error
        assert len(auth) == 1  # a refused request is never retried
        assert first.scores["answer-relevancy-scorer"] == 1.0  # the mean is over scored items only

        judge.healed = True
        judge.reset()
        resumed = run_evals(data, scorers=[judge_scorer(judge), "tone-scorer"], resume=first.run_id,
                            **workdir, **FAST)
        assert resumed.run_id == first.run_id
        assert resumed.summary["scorers"]["answer-relevancy-scorer"]["scored"] == 4
        # only the two errored cells ran: 3 judge steps each (the other items' cells were complete)
        assert judge.request_count == 6
        assert {str(r["messages"]).count("POISON") > 0 or "REFUSED" in str(r["messages"])
                for r in judge.requests} == {True}


def test_fail_fast_stops_the_run(workdir: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    data = rows(3)
    data[0]["output"] = "REFUSED answer."
    with _Poisoned() as judge, pytest.raises(FailFast, match="400"):
        run_evals(data, scorers=[judge_scorer(judge)], fail_fast=True, name="ff", **workdir, **FAST)
    status = Store(workdir["db"]).sql("SELECT status FROM runs WHERE name = 'ff'").rows
    assert status == [("failed",)]


def test_a_configuration_error_stops_the_run_at_once(workdir: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A 401 would hit every request: the run stops at the first one (failed, what it stored kept), rather
    than erroring every cell one by one; the error names the remedy and the --resume."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    data = [{**row, "output": f"AUTH {row['output']}"} for row in rows(20)]
    with _Poisoned() as judge, pytest.raises(MisconfiguredRun, match=r"HTTP 401.*--resume") as stopped:
        run_evals(data, scorers=[judge_scorer(judge), "tone-scorer"], name="badkey", **workdir, **{**FAST, "concurrency": 2})
    assert judge.request_count <= 3  # the items in flight when it stopped, not 20 x 3 steps
    ((run_id, status),) = Store(workdir["db"]).sql("SELECT run_id, status FROM runs WHERE name = 'badkey'").rows
    assert status == "failed" and run_id in str(stopped.value)
