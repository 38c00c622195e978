"""Repeated judging without a run: a cell's aggregate from its samples (flows/engine/samples.py), the judge's
noise statistics (flows/report/noise.py) against a library or a published figure and against a simulated
judge whose truth is known, and a sample's judge settings (seed, cache key)."""

from __future__ import annotations

import random
import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from evalduck.flows.cli import app
from evalduck.flows.engine.samples import aggregate, sampled_cell
from evalduck.flows.report.noise import DELTA_NOISE_SQL, delta_noise_line, icc1, judge_noise, noise_by_scorer, wilson
from evalduck.flows.store import ScoreRow, Store
from evalduck.scorers import JudgeSettings, ScorerInput, StepContext, create_answer_relevancy_scorer


def _row(score: float | None, status: str = "scored", **fields: object) -> ScoreRow:
    return ScoreRow(**{"run_id": "r", "item_id": "i", "scorer_id": "s", "scorer_version": "1", "score": score,
                       "status": status, **fields})  # type: ignore[arg-type]


def test_the_three_aggregates() -> None:
    assert aggregate([1.0, 0.0, 1.0], "mean") == pytest.approx(2 / 3)
    assert aggregate([1.0, 0.0, 0.25], "median") == 0.25
    assert aggregate([1.0, 0.0, 1.0], "majority") == 1.0
    assert aggregate([1.0, 0.0], "majority") == 0.5  # a tie: the median of the tied verdicts
    assert aggregate([0.2, 0.2, 0.9, 0.9, 0.4], "majority") == pytest.approx(0.55)
    with pytest.raises(ValueError, match="no scored sample"):
        aggregate([], "mean")


@given(st.lists(st.floats(0, 1), min_size=1, max_size=9), st.sampled_from(["mean", "median", "majority"]))
def test_an_aggregate_lies_within_its_samples(scores: list[float], how: str) -> None:
    assert min(scores) - 1e-9 <= aggregate(scores, how) <= max(scores) + 1e-9  # type: ignore[arg-type]


def test_a_cell_from_its_samples_keeps_each_and_sums_the_spend() -> None:
    rows = [_row(1.0, reason="all relevant", prompt_tokens=10, cost=0.01, judge_model="m"),
            _row(0.0, reason="none relevant", prompt_tokens=12, cost=0.02, judge_model="m"),
            _row(None, "error", error="s.analyze: JudgeRequestError: refused", prompt_tokens=None)]
    cell, samples = sampled_cell(rows, "mean")
    assert (cell.status, cell.score, cell.samples, cell.score_sd) == ("scored", 0.5, 3, pytest.approx(0.7071, 1e-3))
    assert cell.reason == "[sample 0 of 3: 1] all relevant"  # the nearest sample's (the first of a tie), named
    assert cell.error == "1 of 3 samples not scored (first: s.analyze: JudgeRequestError: refused)"
    assert (cell.prompt_tokens, cell.cost) == (22, pytest.approx(0.03))
    assert [(s.sample, s.status, s.score) for s in samples] == [(0, "scored", 1.0), (1, "scored", 0.0),
                                                              (2, "error", None)]
    failed, _ = sampled_cell([_row(None, "error", error="e1"), _row(None, "error", error="e2")], "mean")
    assert (failed.status, failed.error, failed.samples) == ("error", "e1", 2)  # a resume computes it again
    skipped, _ = sampled_cell([_row(None, "skipped", reason="no context")] * 2, "median")
    assert (skipped.status, skipped.reason) == ("skipped", "no context")


def test_icc1_matches_shrout_and_fleiss() -> None:
    # Shrout & Fleiss (1979), table 2: six targets rated by four judges; their table 4 gives ICC(1,1) = .17.
    ratings = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    icc, (low, high) = icc1(ratings)  # type: ignore[misc]
    assert icc == pytest.approx(0.17, abs=0.005)
    assert low < icc < high and -0.2 < low < 0.1 and 0.6 < high < 0.8


def test_icc1_against_scipys_one_way_anova() -> None:
    from scipy import stats

    rng = random.Random(1)
    cells = [[m + rng.gauss(0, 0.5) for _ in range(rng.choice((2, 3, 4)))] for m in (rng.random() for _ in range(30))]
    f, _ = stats.f_oneway(*cells)
    icc, _ = icc1(cells)
    total, n = sum(map(len, cells)), len(cells)
    k0 = (total - sum(len(c) ** 2 for c in cells) / total) / (n - 1)
    assert icc == pytest.approx((f - 1) / (f + k0 - 1))  # ICC(1) is (F - 1) / (F + k0 - 1)


def test_icc1_edges() -> None:
    assert icc1([[1.0, 1.0], [0.0, 0.0]]) == (1.0, (1.0, 1.0))  # the judge agrees with itself, cells differ
    assert icc1([[1.0, 1.0], [1.0, 1.0]]) == (None, None)  # nothing varies: no share to speak of
    with pytest.raises(ValueError, match="two or more"):
        icc1([[1.0, 0.0]])


def test_wilson_against_the_published_example() -> None:
    # Newcombe (1998), example: 81 of 263 -> 0.2553 to 0.3662.
    low, high = wilson(81, 263)
    assert (low, high) == (pytest.approx(0.2553, abs=1e-4), pytest.approx(0.3662, abs=1e-4))
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == pytest.approx(1.0)


def _simulated(n: int, k: int, p: float, seed: int) -> list[list[float]]:
    """A judge whose verdict on a one-statement answer (truly relevant) flips with probability ``p``."""
    rng = random.Random(seed)
    return [[0.0 if rng.random() < p else 1.0 for _ in range(k)] for _ in range(n)]


@pytest.mark.parametrize("k", [3, 9])
def test_the_noise_of_a_simulated_judge_matches_its_truth(k: int) -> None:
    p = 0.2
    noise = judge_noise(_simulated(200, k, p, seed=k))
    assert noise is not None and noise.cells == 200 and noise.samples == k
    true_sd, true_flips = (p * (1 - p)) ** 0.5, 1 - (1 - p) ** k - p**k
    assert noise.within_sd_ci is not None and noise.within_sd_ci[0] <= true_sd <= noise.within_sd_ci[1]
    assert noise.flip_rate_ci[0] <= true_flips <= noise.flip_rate_ci[1]
    # Every item is equally relevant: all of the variance is the judge's.
    assert noise.judge_share_ci is not None and noise.judge_share_ci[0] <= 1.0 <= noise.judge_share_ci[1] + 1e-9
    assert noise.icc is not None and abs(noise.icc) < 0.1


def test_the_cell_aggregates_spread_falls_with_k() -> None:
    spread = {k: statistics.pstdev(statistics.fmean(c) for c in _simulated(2000, k, 0.2, seed=k)) for k in (1, 3, 9)}
    for k, sd in spread.items():
        assert sd == pytest.approx(0.4 / k**0.5, rel=0.1)  # sqrt(p(1-p)/k)


def test_one_sample_a_cell_says_nothing_of_the_judge() -> None:
    assert judge_noise([[1.0], [0.0]]) is None
    assert noise_by_scorer({"a": [[1.0]], "b": [[1.0, 0.0], [1.0, 1.0]]}).keys() == {"b"}


def test_sample_zero_asks_and_keys_as_a_run_without_repeats() -> None:
    scorer = create_answer_relevancy_scorer(model="openai/fake-judge")
    ctx = StepContext(run=ScorerInput(input="q?", output="a."), results={})
    analyze = scorer.step("preprocess")
    assert scorer.sampled(0) is scorer and analyze.sampled(0) is analyze
    keys = [scorer.sampled(i).step("preprocess").cache_key(ctx) for i in range(3)]
    assert keys[0] == analyze.cache_key(ctx) and len(set(keys)) == 3
    assert [scorer.sampled(i).step("preprocess").judge.seed for i in range(3)] == [None, 1, 2]  # type: ignore[union-attr]
    assert "seed" not in JudgeSettings(model="m").key_fields()
    seeded = JudgeSettings(model="m", seed=40)
    assert seeded.sampled(2).seed == 42 and seeded.sampled(0) is seeded


def _sampled_run(store: Store, run_id: str, cells: list[list[float]]) -> None:
    """A completed run whose answer relevancy cells were judged len(cells[i]) times with these scores."""
    store.start_run(run_id, "noisy", "d.jsonl", "h", {}, directions={"answer-relevancy-scorer": True})
    rows, samples = [], []
    for i, scores in enumerate(cells):
        sample_rows = [_row(s, item_id=f"i{i}", run_id=run_id, scorer_id="answer-relevancy-scorer") for s in scores]
        cell, kept = sampled_cell(sample_rows, "mean")
        rows.append(cell)
        samples += kept
    store.write_batch(run_id, items=[{"item_id": f"i{i}", "input": f"q{i}"} for i in range(len(cells))], scores=rows,
                      samples=samples, status="completed")


def test_compare_says_how_much_of_the_delta_is_the_judge(tmp_path: Path) -> None:
    store = Store(tmp_path / "evals.duckdb")
    _sampled_run(store, "a", _simulated(60, 3, 0.2, seed=1))
    _sampled_run(store, "b", _simulated(60, 3, 0.2, seed=2))
    (row,) = store.sql(DELTA_NOISE_SQL, ["a", "b"]).records()
    # Both runs are the same judge's noise around the same truth: the deltas' variance is all the judge's.
    assert row["judge_var_a"] + row["judge_var_b"] == pytest.approx(row["var_delta"], rel=0.35)
    line = delta_noise_line(row)
    assert line.startswith("judge noise: ") and "run A judged 3x, run B judged 3x" in line
    done = CliRunner().invoke(app, ["--db", str(store.path), "compare", "a", "b"])
    assert done.exit_code == 0 and "of answer-relevancy-scorer's paired-delta variance" in done.stdout
    one = delta_noise_line({**row, "judge_var_a": None, "k_a": None})
    assert "run A judged 1x" in one and "run A's judge noise unknown" in one


def test_the_prompt_fingerprint_follows_what_makes_the_judgement() -> None:
    base = create_answer_relevancy_scorer(model="openai/a")
    assert base.prompt_fingerprint() == create_answer_relevancy_scorer(model="openai/b").prompt_fingerprint()
    assert base.prompt_fingerprint() == base.sampled(2).prompt_fingerprint()  # a sample's seed is no other judge
    assert base.prompt_fingerprint() != create_answer_relevancy_scorer(
        model="openai/a", uncertainty_weight=0.9).prompt_fingerprint()  # another scoring rule
    assert base.prompt_fingerprint() != create_answer_relevancy_scorer(model="openai/a",
                                                                       temperature=0.7).prompt_fingerprint()
    from evalduck.scorers import PREBUILT

    assert PREBUILT["tone-scorer"].factory({}).prompt_fingerprint() is None  # a code scorer has no judge
