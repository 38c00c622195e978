"""One options model: `run_evals` checks its options as `EvalConfig` does, keeps in-memory rows out of the
API under `with_options`, and a scorer's own settings (its id, its `retries`) are honoured or named."""

from __future__ import annotations

import inspect

import pytest
from flow_helpers import judge_scorer, rows

from evalduck.flows import run_evals
from evalduck.flows.config import EvalConfig, RunOptions
from evalduck.flows.inputs.registry import build_scorers
from evalduck.scorers import ConfigError
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, Reply

SCORER = "answer-relevancy-scorer"


def test_run_evals_takes_every_run_option_as_a_keyword_and_no_other() -> None:
    params = set(inspect.signature(run_evals.fn).parameters)
    # `quiet` is how this call shows the run in the caller's terminal, not a run option (no result changes);
    # `dry_run` asks for the run's preflight instead of the run (no flow run: not a field of the UI's form).
    assert params - {"data", "scorers", "target", "on_item_complete", "options", "quiet", "dry_run"} == set(
        RunOptions.model_fields)
    assert set(EvalConfig.model_fields) - {"dataset", "scorers", "target"} == set(RunOptions.model_fields)


@pytest.mark.timeout(60)  # concurrency=0 used to hang for ever on asyncio.Semaphore(0)
@pytest.mark.parametrize(("option", "value", "message"), [
    ("concurrency", 0, "`concurrency` input should be greater than or equal to 1, got 0"),
    ("concurrency", 257, "`concurrency` input should be less than or equal to 256, got 257"),
    ("judge_rpm", 0, "`judge_rpm` input should be greater than 0, got 0"),
    ("retries", -1, "`retries` input should be greater than or equal to 0, got -1"),
    ("chunk_size", 0, "`chunk_size` input should be greater than or equal to 1, got 0"),
])
def test_run_evals_refuses_bad_options_before_any_flow_run(option: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        run_evals(rows(2), scorers=["tone-scorer"], **{option: value})
    assert str(info.value) == message


def test_options_and_keywords_merge_and_are_checked_together() -> None:
    with pytest.raises(ConfigError, match="`concurrency`"):
        run_evals(rows(1), scorers=["tone-scorer"], options=RunOptions(retries=1), concurrency=0)


def test_with_options_keeps_in_memory_rows_out_of_the_api() -> None:
    variant = run_evals.with_options(name="variant-evals")
    assert type(variant) is type(run_evals) and variant.name == "variant-evals"
    assert variant.serialize_parameters({"data": rows(3)})["data"] == "<3 rows in memory>"


@pytest.mark.usefixtures("prefect_harness")
def test_with_options_runs_rows_over_prefects_parameter_limit(workdir: dict[str, str]) -> None:
    big = [{"input": "x" * 2000, "output": "y" * 2000} for _ in range(300)]  # ~1.2 MB of rows
    result = run_evals.with_options(name="variant-evals")(big, scorers=["textual-difference-scorer"], **workdir)
    assert result.summary["scorers"]["textual-difference-scorer"]["scored"] == 300


@pytest.mark.parametrize("spec", [{"id": "tone"}, "tone"])
def test_an_unknown_scorer_id_names_the_value_and_the_choices(spec: object) -> None:
    with pytest.raises(ConfigError) as info:
        build_scorers([spec])  # type: ignore[list-item]
    text = str(info.value)
    assert "'tone'" in text and "'tone-scorer'" in text and "'answer-relevancy-scorer'" in text
    assert "pydantic.dev" not in text


@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize(("scorer_retries", "requests"), [(0, 1), (1, 2), (None, 4)])
def test_a_scorers_own_retries_win_over_the_runs(
    scorer_retries: int | None, requests: int, judge: FakeOpenAIServer, workdir: dict[str, str]
) -> None:
    """The run retries 3 times; a scorer given `retries` itself retries that many (None: the run's)."""
    judge.script(*[Reply.http_error(500, "upstream exploded")] * 4)
    options = {} if scorer_retries is None else {"retries": scorer_retries}
    result = run_evals(rows(1), scorers=[judge_scorer(judge, **options)], retries=3, retry_backoff_s=0, **workdir)
    assert result.summary["scorers"][SCORER]["errored"] == 1
    assert judge.request_count == requests
