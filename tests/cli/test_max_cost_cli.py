"""`evalduck run --max-cost` (issue 28, part 2) as a user runs it: the real command in a subprocess, judged by the
fake OpenAI-compatible judge, recording to the session's Prefect server. The judge's model gets a litellm custom
price in the command's own process (the project's scorer module registers it; requests stay in that process with
--in-process-judge). A run stopped by its budget prints the command that continues it, which finishes the run with
every cell and every judge request once; a model litellm cannot price is refused before anything starts."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

CLI = str(Path(sys.executable).with_name("evalduck"))
MODEL = "openai/fake-judge"
PRICE = 1e-6  # USD per prompt token
OUT_PRICE, COMPLETION = 1e-5, 400  # per completion token, and what the fake judge reports (above the preflight's
# low estimate, so the budget below starts the run and stops it part-way: tests/flows/test_max_cost.py)
ITEMS = 40
STEPS = 3  # judge requests per answer-relevancy cell
PRICES = f'''\
import os

import litellm

litellm.register_model({{"{MODEL}": {{"input_cost_per_token": {PRICE}, "output_cost_per_token": {OUT_PRICE},
                                     "litellm_provider": "openai", "mode": "chat"}}}})

from evalduck.scorers import create_answer_relevancy_scorer

relevancy = create_answer_relevancy_scorer(model="{MODEL}", api_base=os.environ["FAKE_JUDGE_BASE"], timeout=5)
'''


def _env(judge: FakeOpenAIServer) -> dict[str, str]:
    from prefect.settings import get_current_settings

    environ = {k: v for k, v in os.environ.items() if k != "EVALDUCK_EPHEMERAL"}
    return {**environ, "OPENAI_API_KEY": "sk-fake-key-for-tests", "FAKE_JUDGE_BASE": judge.base_url,
            "PREFECT_API_URL": str(get_current_settings().api.url)}


def evalduck(cwd: Path, judge: FakeOpenAIServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=_env(judge),
                          stdin=subprocess.DEVNULL)


def _stored(folder: Path, query: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(folder / "evals.duckdb"), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def _prompt_tokens(request: dict[str, Any]) -> int:
    return sum(len(str(m.get("content", ""))) for m in request.get("messages", [])) // 4 + 1


def _request_cost(request: dict[str, Any]) -> float:
    return _prompt_tokens(request) * PRICE + COMPLETION * OUT_PRICE


@pytest.fixture
def project(tmp_path: Path, prefect_harness: None) -> Iterator[tuple[Path, FakeOpenAIServer]]:
    (tmp_path / "prices.py").write_text(PRICES)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({
        "id": f"q{i}", "input": f"What is the capital of country number {i}?",
        "output": f"The capital of country {i} is City{i}. It has a famous museum."}) + "\n" for i in range(ITEMS)))
    with FakeOpenAIServer(latency=0.02, usage=lambda req, answer: (_prompt_tokens(req), COMPLETION)) as judge:
        yield tmp_path, judge


def test_a_run_stopped_by_its_budget_names_the_command_that_finishes_it(project: tuple[Path, FakeOpenAIServer]) -> None:
    folder, judge = project
    common = ("run", "data.jsonl", "-s", "prices:relevancy", "--in-process-judge", "--no-report", "--concurrency", "4")
    budget = 0.4 * ITEMS * STEPS * (265 * PRICE + COMPLETION * OUT_PRICE)  # ~265 prompt tokens: stops near 40%
    first = evalduck(folder, judge, *common, "--max-cost", f"{budget:.6f}")
    assert first.returncode == 1, first.stdout + first.stderr
    (run_id, status), = _stored(folder, "SELECT run_id, status FROM runs")
    assert status == "budget_exceeded"
    line = next(x for x in first.stderr.splitlines() if "stopped at its budget" in x)
    (spent,) = _stored(folder, "SELECT sum(cost) FROM scores")[0]
    assert f"spent ${spent:.4f} of --max-cost ${budget:.4f}" in line
    assert budget <= spent <= budget + 4 * max(_request_cost(r) for r in judge.requests)
    assert f"spend ${spent:.4f} of budget ${budget:.4f}" in first.stdout  # the summary's line
    command = shlex.split(line.split("computed by: ", 1)[1])
    assert command[:2] == ["evalduck", "run"] and command[-4:-2] == ["--resume", run_id]
    assert command[-2] == "--max-cost" and float(command[-1]) > spent

    shown = evalduck(folder, judge, "show", run_id)
    assert shown.returncode == 0 and f"spend=${spent:.4f}  budget=${budget:.4f}" in shown.stdout, shown.stdout

    done = evalduck(folder, judge, *command[1:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert _stored(folder, "SELECT status FROM runs") == [("completed",)]
    assert _stored(folder, "SELECT count(*), count(DISTINCT item_id), count(*) FILTER (WHERE status = 'scored') "
                           "FROM scores") == [(ITEMS, ITEMS, ITEMS)]
    asked = judge.requests
    assert len(asked) == ITEMS * STEPS == len({json.dumps(r["messages"], sort_keys=True) for r in asked})


def test_a_model_litellm_cannot_price_is_refused_before_the_run(project: tuple[Path, FakeOpenAIServer]) -> None:
    folder, judge = project
    refused = evalduck(folder, judge, "run", "data.jsonl", "-s", "answer-relevancy-scorer", "--judge-model",
                       "openai/no-price-known", "--judge-api-base", judge.base_url, "--max-cost", "1")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "no price for openai/no-price-known" in lines[0] and "--allow-unpriced" in lines[0]
    assert judge.request_count == 0 and not (folder / "evals.duckdb").exists()
