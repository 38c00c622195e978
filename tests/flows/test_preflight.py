"""The preflight (`run_evals(..., dry_run=True)`, issue 28 part 1) against the fake judge: its request and cache-hit
counts exactly what the judge then sees for a fresh, a fully cached and a half-cached dataset; its token
estimates within 10% of the usage the judge reports (counted as a provider counts them: ``tiktoken_usage``); and a
dry run creates no flow run, no results file, no row and no cache entry."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from flow_helpers import judge_scorer

from evalduck.flows import run_evals
from evalduck.flows.run.preflight import Preflight
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, tiktoken_usage

SCORER = "answer-relevancy-scorer"
STEPS = 3  # preprocess, analyze, generate_reason: one request each per cell


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """The fake judge, reporting the usage a provider would (tokens, not characters / 4)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    with FakeOpenAIServer(usage=tiktoken_usage()) as server:
        yield server


def _rows(n: int, topic: str, start: int = 0) -> list[dict[str, Any]]:
    return [{"id": f"{topic}-{i}", "input": f"What should I know about the {topic} number {i}?",
             "output": f"The {topic} number {i} is well known. It opened in {1900 + i}. Visitors like its garden."}
            for i in range(start, start + n)]


def _dry(data: list[dict[str, Any]], judge: FakeOpenAIServer, workdir: dict[str, str], **kw: Any) -> Preflight:
    found = run_evals(data, scorers=[judge_scorer(judge, **kw)], dry_run=True, quiet=True, **workdir)
    assert isinstance(found, Preflight)
    return found


def _run(data: list[dict[str, Any]], judge: FakeOpenAIServer, workdir: dict[str, str], **kw: Any) -> str:
    result = run_evals(data, scorers=[judge_scorer(judge, **kw)], quiet=True, report=False, judge_process=False,
                       **workdir)
    return result.run_id


def _usage(db: str, run_id: str) -> tuple[int, int]:
    con = duckdb.connect(db, read_only=True)
    try:
        prompt, completion = con.execute("SELECT sum(prompt_tokens), sum(completion_tokens) FROM scores "
                                         "WHERE run_id = ? AND scorer_id = ?", [run_id, SCORER]).fetchone()  # type: ignore[misc]
    finally:
        con.close()
    return int(prompt or 0), int(completion or 0)


def _flow_runs() -> int:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.count_flow_runs()


def _close(estimate: int | None, actual: int) -> bool:
    return estimate is not None and abs(estimate - actual) <= 0.10 * actual


@pytest.mark.usefixtures("prefect_harness")
def test_counts_are_exact_for_a_fresh_a_cached_and_a_half_cached_dataset(
    judge: FakeOpenAIServer, workdir: dict[str, str]
) -> None:
    fresh = _rows(8, "museum")
    line = _dry(fresh, judge, workdir).lines[0]
    assert (line.name, line.requests, line.cached, line.to_send) == (SCORER, 8 * STEPS, 0, 8 * STEPS)
    assert judge.request_count == 0
    _run(fresh, judge, workdir)
    assert judge.request_count == line.to_send

    judge.reset()
    line = _dry(fresh, judge, workdir).lines[0]
    assert (line.requests, line.cached, line.to_send) == (8 * STEPS, 8 * STEPS, 0)
    assert line.prompt_tokens == 0 and line.cost_low == 0.0
    _run(fresh, judge, workdir)
    assert judge.request_count == 0

    half = fresh[:4] + _rows(4, "bridge")
    line = _dry(half, judge, workdir).lines[0]
    assert (line.requests, line.cached, line.to_send) == (8 * STEPS, 4 * STEPS, 4 * STEPS)
    _run(half, judge, workdir)
    assert judge.request_count == line.to_send

    judge.reset()  # --no-cache: nothing is cached, every request is sent
    line = _dry(half, judge, workdir).lines[0]
    assert line.cached == 8 * STEPS
    line = run_evals(half, scorers=[judge_scorer(judge)], dry_run=True, quiet=True, refresh=True,
                     **workdir).lines[0]  # type: ignore[union-attr]
    assert (line.cached, line.to_send) == (0, 8 * STEPS)


@pytest.mark.usefixtures("prefect_harness")
def test_token_estimates_are_within_ten_percent_of_the_reported_usage(
    judge: FakeOpenAIServer, workdir: dict[str, str]
) -> None:
    """The first run has no history: its prompts past the first step are estimated from the first step's. The
    next run, on new rows, has the first run's history (stored prompts and completion tokens)."""
    model = {"model": "openai/gpt-4o-mini"}  # priced by litellm; the requests still go to the fake judge
    first = _rows(10, "museum")
    line = _dry(first, judge, workdir, **model).lines[0]
    assert line.price == "priced" and line.prompts_estimated == 10 * (STEPS - 1)
    run_id = _run(first, judge, workdir, **model)
    prompt, _ = _usage(workdir["db"], run_id)
    assert _close(line.prompt_tokens, prompt), (line.prompt_tokens, prompt)

    second = _rows(10, "garden", start=20)
    line = _dry(second, judge, workdir, **model).lines[0]
    assert line.completion_source is not None and line.completion_source.startswith("history")
    run_id = _run(second, judge, workdir, **model)
    prompt, completion = _usage(workdir["db"], run_id)
    assert _close(line.prompt_tokens, prompt), (line.prompt_tokens, prompt)
    assert _close(line.completion_tokens, completion), (line.completion_tokens, completion)
    assert line.cost_low is not None and line.cost_high is not None and 0 < line.cost_low <= line.cost_high


@pytest.mark.usefixtures("prefect_harness")
def test_a_dry_run_creates_no_flow_run_no_file_and_no_row(judge: FakeOpenAIServer, workdir: dict[str, str]) -> None:
    before = _flow_runs()
    unpriced = {"model": "openai/fake-judge-never-priced"}  # not in litellm's map (no test registers a price for it)
    line = _dry(_rows(3, "museum"), judge, workdir, **unpriced).lines[0]
    assert line.price == "unknown price" and line.cost_low is None
    assert _flow_runs() == before
    assert not Path(workdir["db"]).exists() and not Path(workdir["cache_dir"]).exists()

    run_id = _run(_rows(3, "museum"), judge, workdir)
    db = Path(workdir["db"])
    stamp, cached = (db.stat().st_mtime_ns, db.stat().st_size), sorted(Path(workdir["cache_dir"]).rglob("*"))
    runs = _flow_runs()
    _dry(_rows(3, "bridge"), judge, workdir)
    run_evals(_rows(3, "museum"), scorers=[judge_scorer(judge)], dry_run=True, quiet=True, resume=run_id, **workdir)
    assert _flow_runs() == runs
    assert (db.stat().st_mtime_ns, db.stat().st_size) == stamp
    assert sorted(Path(workdir["cache_dir"]).rglob("*")) == cached
    assert judge.request_count == 3 * STEPS  # the real run's only


@pytest.mark.usefixtures("prefect_harness")
def test_a_model_targets_calls_and_its_cached_answers_key_the_judge_steps(
    judge: FakeOpenAIServer, workdir: dict[str, str]
) -> None:
    """The target's answers are unknown before its first run: the judge steps are counted, uncached, their prompts
    estimated. Once the answers are cached, the preflight reads them and computes every judge step's key."""
    data = [{"id": r["id"], "input": r["input"]} for r in _rows(4, "museum")]
    target = {"target": "model:openai/fake-target", "target_api_base": judge.base_url}
    found = run_evals(data, scorers=[judge_scorer(judge)], dry_run=True, quiet=True, **target, **workdir)
    assert isinstance(found, Preflight)
    asked, scorer = found.lines
    assert (asked.name, asked.requests, asked.cached, asked.price) == ("target", 4, 0, "unknown price")
    assert asked.prompt_tokens and (scorer.requests, scorer.cached, scorer.prompts_estimated) == (12, 0, 12)
    run_evals(data, scorers=[judge_scorer(judge)], quiet=True, report=False, judge_process=False, **target, **workdir)
    assert judge.request_count == 4 + 12

    found = run_evals(data, scorers=[judge_scorer(judge)], dry_run=True, quiet=True, **target, **workdir)
    assert isinstance(found, Preflight)
    asked, scorer = found.lines
    assert (asked.cached, scorer.cached, scorer.prompts_estimated, found.requests - found.cached) == (4, 12, 0, 0)


def test_judge_samples_multiply_a_judge_scorers_requests(judge: FakeOpenAIServer, workdir: dict[str, str]) -> None:
    """No Prefect needed: a dry run makes no flow run."""
    found = run_evals(_rows(4, "museum"), scorers=[judge_scorer(judge), "tone-scorer"], dry_run=True, quiet=True,
                      judge_samples=3, **workdir)
    assert isinstance(found, Preflight)
    assert [(line.name, line.kind, line.requests) for line in found.lines] == [
        (SCORER, "judge", 4 * STEPS * 3), ("tone-scorer", "code", 0)]
    assert found.cells == 8 and judge.request_count == 0


def test_a_cache_record_is_read_as_prefect_reads_it(tmp_path: Path) -> None:
    """A record Prefect would not use (unreadable, expired) is a miss; --no-cache reads nothing."""
    import json

    from evalduck.flows.run.preflight_walk import CachedResults

    def record(key: str, expiration: str | None, result: object = None) -> None:
        meta = {"storage_key": str(tmp_path / key), "expiration": expiration, "serializer": {"type": "json"}}
        (tmp_path / key).write_text(json.dumps({"metadata": meta, "result": json.dumps(result)}))

    record("good", None, {"result": {"statements": ["a"]}})
    record("old", "2001-01-01T00:00:00+00:00", {"result": 1})
    record("later", "2999-01-01T00:00:00+00:00", {"result": 2})
    (tmp_path / "broken").write_text('{"metadata": ')
    cache = CachedResults(tmp_path, refresh=False)
    assert cache.get("good") == {"result": {"statements": ["a"]}} and cache.get("later") == {"result": 2}
    assert cache.get("old") is None and cache.get("broken") is None and cache.get("absent") is None
    assert CachedResults(tmp_path, refresh=True).get("good") is None
    assert CachedResults(tmp_path / "none", refresh=False).get("good") is None
