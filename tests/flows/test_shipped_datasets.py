"""The shipped RAG and agent datasets, one run each through run_evals with the fake judge, read back from
DuckDB: every item's stored score is the verdict its row's metadata expects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalduck.flows import run_evals
from evalduck.flows.store import Store
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.usefixtures("prefect_harness")
DATASETS = Path(__file__).resolve().parents[2] / "datasets"
TOOLS = [
    {"name": "get_weather", "description": "Current weather and forecast for a city."},
    {"name": "search_flights", "description": "Search flights between two airports on a date."},
    {"name": "book_flight", "description": "Book a flight found by search_flights."},
    {"name": "get_order_status", "description": "Status and delivery date of an order."},
    {"name": "cancel_order", "description": "Cancel an order that has not shipped."},
    {"name": "send_email", "description": "Send an email to someone."},
    {"name": "calendar_create_event", "description": "Create a calendar event."},
    {"name": "convert_currency", "description": "Convert an amount between currencies."},
    {"name": "search_docs", "description": "Search the product documentation."},
]


def _judged(scorer_id: str, server: FakeOpenAIServer, **options: Any) -> dict[str, Any]:
    return {"id": scorer_id, "options": {"model": "openai/fake-judge", "api_base": server.base_url, "timeout": 5,
                                         **options}}


def _cells(db: str, run_id: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    rows = Store(db).sql("SELECT s.scorer_id, s.item_id, s.status, s.score, s.reason, i.metadata FROM scores AS s "
                         "JOIN items AS i USING (run_id, item_id) WHERE run_id = ?", [run_id]).rows
    return {(scorer, item): (status, score, reason, json.loads(meta)) for scorer, item, status, score, reason, meta in rows}


def test_rag_dataset(judge: FakeOpenAIServer, workdir: dict[str, str]) -> None:
    scorers = [_judged("faithfulness-scorer", judge), _judged("hallucination-scorer", judge)]
    result = run_evals(str(DATASETS / "rag.jsonl"), scorers=scorers, **workdir)
    cells = _cells(workdir["db"], result.run_id)
    assert len(cells) == 2 * 24
    for (scorer, item), (status, score, _, meta) in cells.items():
        assert (status, score) == ("scored", meta["expected"][scorer.removesuffix("-scorer")]), (scorer, item, meta)
    assert result.scores == pytest.approx({"faithfulness-scorer": 11.5 / 24, "hallucination-scorer": 12.5 / 24})  # exact means
    (direction,) = Store(workdir["db"]).sql("SELECT higher_is_better FROM run_scorers WHERE run_id = ? AND "
                                           "scorer_id = 'hallucination-scorer'", [result.run_id]).rows
    assert direction == (False,)
    stored = Store(workdir["db"]).sql("SELECT context FROM items WHERE run_id = ? AND item_id = 'rag-23'",
                                      [result.run_id]).rows
    assert stored == [("[]",)]  # an empty retrieval is a given, empty context


def test_agent_dataset(judge: FakeOpenAIServer, workdir: dict[str, str]) -> None:
    scorers = ["code-tool-call-accuracy-scorer", _judged("llm-tool-call-accuracy-scorer", judge, available_tools=TOOLS)]
    result = run_evals(str(DATASETS / "agent.jsonl"), scorers=scorers, **workdir)
    cells = _cells(workdir["db"], result.run_id)
    assert len(cells) == 2 * 22
    for (scorer, item), (status, score, reason, meta) in cells.items():
        if scorer == "llm-tool-call-accuracy-scorer":
            assert status == "scored", (item, reason)
            continue
        want = meta["expected"]["code-tool-call-accuracy"]
        if want is None:  # no expectations in the row: not scorable, skipped with the reason
            assert (status, score) == ("skipped", None) and "expected_tool" in reason, (item, reason)
        else:
            assert (status, score) == ("scored", want), (item, meta)
    summary = result.summary["scorers"]["code-tool-call-accuracy-scorer"]
    assert (summary["scored"], summary["skipped"], summary["errored"]) == (20, 2, 0)
    llm = {item: score for (scorer, item), (_, score, _, _) in cells.items() if scorer == "llm-tool-call-accuracy-scorer"}
    assert llm["agent-01"] == 1.0 and llm["agent-07"] == 0.0  # the weather tool for weather; docs search is not
