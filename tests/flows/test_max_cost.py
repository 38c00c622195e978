"""`max_cost` (issue 28, part 2): a 200-item run on the fake judge, priced by a litellm custom price, stopped by
its budget part-way (status `budget_exceeded`, spend within one in-flight batch of the budget, every request's
cost stored), then resumed to completion with every cell and every judge request exactly once; a model litellm
cannot price refused before the run unless `allow_unpriced`; the spend's rules (flows/engine/spend.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from flow_helpers import judge_scorer, rows

from evalduck.flows import run_evals
from evalduck.flows.cli.run_budget import with_max_cost
from evalduck.flows.engine.spend import BudgetReached, Spend
from evalduck.flows.run.max_cost import UnpricedModelError, next_budget
from evalduck.flows.run.over_budget import OverBudgetError
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

MODEL = "openai/fake-judge-priced"  # a name of its own: litellm keeps what register_model learnt in this process
PRICE = 1e-6  # USD per prompt token
OUT_PRICE, COMPLETION = 1e-5, 400  # per completion token, and what the fake judge reports: more than the
# preflight's low estimate (no history: 50), so a budget between that estimate and the real cost starts the run
# (a budget below the low estimate is refused before it: flows/run/max_cost.py) and stops it part-way
CONCURRENCY = 4
ITEMS = 200
STEPS = 3  # answer-relevancy-scorer's judge requests per cell: preprocess, analyze, generate_reason


@pytest.fixture
def priced() -> Iterator[None]:
    """A litellm custom price for the fake judge's model, in this process (the flow's: judge_process=False)."""
    import litellm

    litellm.register_model({MODEL: {"input_cost_per_token": PRICE, "output_cost_per_token": OUT_PRICE,
                                    "litellm_provider": "openai", "mode": "chat"}})
    yield
    litellm.model_cost.pop(MODEL, None)


def _prompt_tokens(request: dict) -> int:
    return sum(len(str(m.get("content", ""))) for m in request.get("messages", [])) // 4 + 1


def _usage(request: dict, answer: str) -> tuple[int, int]:
    """The usage the fake judge reports: chars // 4 + 1 prompt tokens, COMPLETION completion tokens."""
    return _prompt_tokens(request), COMPLETION


def _request_cost(request: dict) -> float:
    """What litellm prices one request at."""
    return _prompt_tokens(request) * PRICE + COMPLETION * OUT_PRICE


def _stored(db: str, query: str, *args: object) -> list[tuple]:
    con = duckdb.connect(db, read_only=True)
    try:
        return con.execute(query, list(args)).fetchall()
    finally:
        con.close()


@pytest.mark.usefixtures("prefect_harness", "priced")
def test_a_budget_stops_a_run_mid_way_and_a_resume_finishes_it_with_every_cell_once(
    workdir: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    with FakeOpenAIServer(latency=0.02, usage=_usage) as judge:
        scorer = judge_scorer(judge, model=MODEL)
        run = {"scorers": [scorer], "concurrency": CONCURRENCY, "judge_process": False, "report": False,
               "quiet": True, **workdir}
        data = rows(ITEMS)
        probe = run_evals(data[:1], **{**run, "db": str(Path(workdir["db"]).with_name("probe.duckdb")),
                                       "cache_dir": workdir["cache_dir"] + "-probe"})
        per_cell = probe.summary["scorers"]["answer-relevancy-scorer"]["judge_cost_usd"]
        assert per_cell and per_cell > 0  # the custom price reached the requests
        judge.reset()
        budget = round(per_cell * ITEMS * 0.4, 6)  # about 80 of the 200 cells

        first = run_evals(data, max_cost=budget, **run)
        db = workdir["db"]
        assert first.status == "budget_exceeded"
        assert _stored(db, "SELECT status FROM runs WHERE run_id = ?", first.run_id) == [("budget_exceeded",)]
        asked = judge.requests
        one_request = max(_request_cost(r) for r in asked)
        (spent,) = _stored(db, "SELECT sum(cost) FROM scores WHERE run_id = ?", first.run_id)[0]
        assert spent == pytest.approx(sum(_request_cost(r) for r in asked))  # every request's cost is stored
        assert spent == pytest.approx(first.spend)
        assert budget <= spent <= budget + CONCURRENCY * one_request  # the requests in flight, no more
        (stored, scored), = _stored(db, "SELECT count(*), count(*) FILTER (WHERE status = 'scored') FROM scores "
                                        "WHERE run_id = ?", first.run_id)
        assert 0 < scored < ITEMS and stored - scored <= CONCURRENCY  # the others were never started: missing
        cut = _stored(db, "SELECT error FROM scores WHERE run_id = ? AND status = 'error'", first.run_id)
        assert all("not sent, the run's spend" in e for (e,) in cut)  # cut part-way: an error with what it spent

        # Resumed with the same budget: what is left costs more than all of it (the preflight now knows this
        # judge's answers from the stored cells), so it is refused before it starts, nothing sent.
        with pytest.raises(OverBudgetError, match="above the budget even at the low estimate"):
            run_evals(data, resume=first.run_id, max_cost=budget, **run)
        assert judge.request_count == len(asked)

        done = run_evals(data, resume=first.run_id, max_cost=next_budget(spent, budget, scored, ITEMS) * 2, **run)
        assert done.status == "completed"
        assert _stored(db, "SELECT count(*), count(DISTINCT item_id), count(*) FILTER (WHERE status = 'scored') "
                           "FROM scores WHERE run_id = ?", first.run_id) == [(ITEMS, ITEMS, ITEMS)]
        asked = judge.requests
        assert len(asked) == ITEMS * STEPS  # every judge request once, across the stopped run and its resume
        assert len({json.dumps(r["messages"], sort_keys=True) for r in asked}) == ITEMS * STEPS
        # What the whole run cost: every request priced once (a cut cell's first steps among them).
        assert done.spend == pytest.approx(sum(_request_cost(r) for r in asked))

        # A budget below the preflight's low estimate: refused before the run, nothing sent or stored.
        with pytest.raises(OverBudgetError, match=r"--max-cost 0.001: the run's 600 requests to send are estimated "
                                                  r"at \$\d+\.\d{4} to \$\d+\.\d{4}, above the budget"):
            run_evals(data, max_cost=0.001, **{**run, "cache_dir": workdir["cache_dir"] + "-fresh",
                                               "db": str(Path(db).with_name("refused.duckdb"))})
        assert judge.request_count == len(asked) and not Path(db).with_name("refused.duckdb").exists()


@pytest.mark.usefixtures("prefect_harness")
def test_a_model_without_a_price_is_refused_before_the_run_unless_allowed(
    judge: FakeOpenAIServer, workdir: dict[str, str]
) -> None:
    scorer = judge_scorer(judge, model="openai/no-price-known")
    with pytest.raises(UnpricedModelError, match="no price for openai/no-price-known"):
        run_evals(rows(2), scorers=[scorer], max_cost=1.0, judge_process=False, quiet=True, **workdir)
    assert judge.request_count == 0 and not Path(workdir["db"]).exists()  # nothing sent, nothing stored
    result = run_evals(rows(2), scorers=[scorer], max_cost=1.0, allow_unpriced=True, judge_process=False,
                       report=False, quiet=True, **workdir)
    assert result.status == "completed" and result.spend == 0 and judge.request_count == 2 * STEPS


def test_the_spend_counts_priced_requests_and_refuses_new_ones_at_the_budget() -> None:
    spend = Spend(0.01, stored=0.004)
    spend.allow("s.analyze")
    spend.add([{"cost": 0.005}, {"cost": None}])  # an unpriced request counts nothing
    assert not spend.reached and not spend.stopped
    spend.add([{"cost": 0.002}])
    with pytest.raises(BudgetReached, match=r"s.preprocess: not sent, the run's spend \$0.0110 reached its budget"):
        spend.allow("s.preprocess")
    assert spend.stopped
    Spend(None).allow("no budget: never refused")


def test_the_resume_line_sets_a_budget_for_the_rest() -> None:
    assert next_budget(0.05, 0.04, 40, 200) == 0.25  # the cost per finished cell so far, for every cell
    assert next_budget(0.05, 0.04, 0, 200) == 0.08
    assert with_max_cost("evalduck run d.jsonl --max-cost 0.04 --resume abc", 0.25) == (
        "evalduck run d.jsonl --resume abc --max-cost 0.25")
    assert with_max_cost("evalduck run 'my data.jsonl' --max-cost=1", 2) == "evalduck run 'my data.jsonl' --max-cost 2"
