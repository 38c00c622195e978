"""Repeated judging through real runs (the Prefect test harness, the fake judge over HTTP): K = 1 is a run
without the option, request for request and key for key; K = 3 asks only the samples the cache lacks, stores
each once, and a judge that disagrees with itself shows in the summary and in `evalduck show`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from flow_helpers import judge_scorer, rows
from typer.testing import CliRunner

from evalduck.flows import run_evals
from evalduck.flows.cli import app
from evalduck.flows.report.artifacts import summary_rows, summary_table
from evalduck.flows.report.noise import judge_noise
from evalduck.flows.store import Store
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, NoisyOpenAIServer, Reply, request_step

pytestmark = pytest.mark.usefixtures("prefect_harness")
SCORER = "answer-relevancy-scorer"
CLI = str(Path(sys.executable).with_name("evalduck"))


def _bodies(server: FakeOpenAIServer) -> list[str]:
    """Each request as sent (order aside): what a provider would see."""
    return sorted(json.dumps(r, sort_keys=True) for r in server.requests)


def test_one_sample_is_a_run_without_the_option_and_three_add_only_the_new_samples(
        judge: FakeOpenAIServer, workdir: dict[str, str], tmp_path: Any) -> None:
    data = rows(4)
    run_evals(data, scorers=[judge_scorer(judge)], quiet=True, **workdir)
    plain = _bodies(judge)
    assert plain and not any('"seed"' in b for b in plain)

    judge.reset()
    once = run_evals(data, scorers=[judge_scorer(judge)], judge_samples=1, quiet=True,
                     db=str(tmp_path / "once.duckdb"), cache_dir=str(tmp_path / "other-cache"))
    assert _bodies(judge) == plain  # the same requests, in a cache of its own

    judge.reset()  # on the first run's cache: sample 0 is cached (its keys are the run's), samples 1 and 2 not
    thrice = run_evals(data, scorers=[judge_scorer(judge)], judge_samples=3, quiet=True, **workdir)
    assert judge.request_count == 2 * len(plain)
    assert sorted({r.get("seed") for r in judge.requests}) == [1, 2]
    store = Store(workdir["db"])
    assert store.sql("SELECT count(*), count(DISTINCT (item_id, sample)) FROM score_samples "
                     "WHERE run_id = ?", [thrice.run_id]).rows == [(12, 12)]
    assert store.sql("SELECT DISTINCT samples FROM scores WHERE run_id = ?", [thrice.run_id]).rows == [(3,)]
    assert thrice.scores == once.scores  # the fake judge agrees with itself: every sample the same

    judge.reset()
    again = run_evals(data, scorers=[judge_scorer(judge)], judge_samples=3, quiet=True, **workdir)
    assert judge.request_count == 0 and again.scores == thrice.scores


def test_a_noisy_judge_shows_in_the_summary_and_in_show(workdir: dict[str, str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    # One sentence per answer: each sample scores 1 (a "yes") or 0 (flipped, with probability 0.2).
    data = [{"id": f"q{i}", "input": f"What is the capital of country {i}?", "output": f"It is City{i}."}
            for i in range(40)]
    with NoisyOpenAIServer(flip_rate=0.2, seed=3) as judge:
        result = run_evals(data, scorers=[judge_scorer(judge)], judge_samples=3, concurrency=8, quiet=True,
                           **workdir)
        assert judge.flipped > 0
    s = result.summary["scorers"][SCORER]
    p, k = 0.2, 3
    low, high = s["judge_flip_rate_ci"]
    assert low <= 1 - (1 - p) ** k - p**k <= high
    sd_low, sd_high = s["judge_sd_ci"]
    assert sd_low <= (p * (1 - p)) ** 0.5 <= sd_high
    assert s["judge_samples"] == 3 and s["judge_share"] > 0.6  # every item equally relevant: the judge's variance
    cells = Store(workdir["db"]).sql("SELECT score, score_sd FROM scores WHERE run_id = ?", [result.run_id]).rows
    assert len(cells) == 40 and all(score in (0.0, 1 / 3, 2 / 3, 1.0) or abs(score * 3 - round(score * 3)) < 1e-9
                                    for score, _ in cells)

    assert result.report is not None and 'aria-label="judge noise"' in Path(result.report).read_text(encoding="utf-8")
    artifact = summary_table(summary_rows(Store(workdir["db"]).run_summary(result.run_id).scorers,
                                          {SCORER: judge_noise(Store(workdir["db"]).run_summary(result.run_id)
                                                               .samples[SCORER])}))  # type: ignore[dict-item]
    assert artifact[0]["judge_samples"] == 3.0 and "–" in artifact[0]["judge_flip_rate_ci"]  # "0.412–0.701"

    shown = CliRunner().invoke(app, ["--db", workdir["db"], "show", result.run_id])
    assert shown.exit_code == 0, shown.output
    assert "Judge noise" in shown.stdout and "flip rate" in shown.stdout


class _RefusingJudge(FakeOpenAIServer):
    """Refuses (HTTP 400, never retried) every analyze request about ``refused`` countries."""

    refused: set[str] = set()

    def respond(self, req: dict[str, Any]) -> Reply:
        prompt = json.dumps(req.get("messages"))
        if request_step(req) == "analyze" and any(f"country {c} " in prompt for c in self.refused):
            return Reply.http_error(400, "refused for the test", "invalid_request_error")
        return super().respond(req)


def test_a_resume_computes_a_failed_cell_and_stores_each_sample_once(workdir: dict[str, str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    data = rows(5)
    with _RefusingJudge() as judge:
        judge.refused = {"1", "3"}
        first = run_evals(data, scorers=[judge_scorer(judge)], judge_samples=3, quiet=True, **workdir)
        assert first.summary["scorers"][SCORER]["errored"] == 2
        judge.refused = set()
        judge.reset()
        resumed = run_evals(data, scorers=[judge_scorer(judge)], judge_samples=3, resume=first.run_id, quiet=True,
                            **workdir)
    assert resumed.run_id == first.run_id and resumed.summary["scorers"][SCORER]["scored"] == 5
    assert {r.get("seed") for r in judge.requests if request_step(r) == "analyze"} == {None, 1, 2}
    assert len([r for r in judge.requests if request_step(r) == "analyze"]) == 6  # 2 cells x 3 samples
    store = Store(workdir["db"])
    assert store.sql("SELECT count(*), count(DISTINCT (item_id, sample)), count(*) FILTER (status = 'scored') "
                     "FROM score_samples WHERE run_id = ?", [first.run_id]).rows == [(15, 15, 15)]


def test_a_killed_run_resumes_with_every_sample_stored_once(judge: FakeOpenAIServer, tmp_path: Path) -> None:
    from prefect.settings import get_current_settings

    judge.latency = 0.2
    data = rows(12)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
    env = {**os.environ, "PREFECT_API_URL": str(get_current_settings().api.url), "OPENAI_API_KEY": "sk-fake"}
    args = [CLI, "run", "data.jsonl", "-s", SCORER, "--judge-model", "openai/fake-judge", "--judge-api-base",
            judge.base_url, "--judge-samples", "3", "--concurrency", "2", "--no-report"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while judge.request_count < 40:  # a few cells done, others in flight
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    store = Store(tmp_path / "evals.duckdb")
    ((run_id, stored),) = store.sql("SELECT run_id, (SELECT count(*) FROM scores) FROM runs").rows
    assert 0 < stored < 12
    done = subprocess.run([*args, "--resume", run_id], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    assert store.sql("SELECT count(*), count(DISTINCT (item_id, sample)), count(*) FILTER (status = 'scored') "
                     "FROM score_samples WHERE run_id = ?", [run_id]).rows == [(36, 36, 36)]
    assert store.sql("SELECT count(*), min(samples) FROM scores WHERE run_id = ? AND status = 'scored'",
                     [run_id]).rows == [(12, 3)]
