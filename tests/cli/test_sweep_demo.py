"""The shipped sweep (`make sweep-demo`: datasets/sweep-demo.yaml, examples/support_bots.py) as a newcomer runs
it, in a copy of the files it names: every candidate's answers come from its bot with its system prompt, the
fake judge scores answer relevancy, and the leaderboard ranks the four candidates."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("evalduck"))


@pytest.fixture
def checkout(tmp_path: Path, prefect_harness: None) -> Path:
    """What `make sweep-demo` reads, at the same relative paths."""
    for part in ("datasets/sweep-demo.yaml", "datasets/demo.jsonl", "examples/support_bots.py",
                 "examples/prompts/terse.txt", "examples/prompts/friendly.txt"):
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / part, tmp_path / part)
    return tmp_path


def test_the_shipped_sweep_runs_four_bots_and_ranks_them(checkout: Path) -> None:
    from prefect.settings import get_current_settings

    with FakeOpenAIServer() as judge:
        env = {**{k: v for k, v in os.environ.items() if k != "EVALDUCK_EPHEMERAL"},
               "PREFECT_API_URL": str(get_current_settings().api.url), "EVALDUCK_JUDGE_MODEL": "openai/fake-judge",
               "OPENAI_API_BASE": judge.base_url, "OPENAI_API_KEY": "sk-fake"}
        done = subprocess.run([CLI, "sweep", "datasets/sweep-demo.yaml"], cwd=checkout, capture_output=True,
                              text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stdout + done.stderr
        assert judge.request_count > 0  # answer relevancy was judged, not skipped
    assert "4 candidate(s) x 1 run(s), baseline support_bots:faq_bot | terse.txt" in done.stderr
    report = Path(next(line for line in done.stdout.splitlines() if line.startswith("report: ")).split(": ", 1)[1])
    assert report.is_file() and report.parent == checkout / "reports" and "support_bots:topic_bot" in report.read_text()
    con = duckdb.connect(str(checkout / "evals.duckdb"), read_only=True)
    try:
        answers = dict(con.execute(
            "SELECT r.candidate, list(i.output::VARCHAR ORDER BY i.item_id) FROM items i JOIN runs r USING (run_id) "
            "GROUP BY ALL").fetchall())
        statuses = con.execute("SELECT DISTINCT s.status FROM scores s").fetchall()
    finally:
        con.close()
    assert len(answers) == 4 and all(len(a) == 24 for a in answers.values())
    friendly = answers["support_bots:topic_bot | friendly.txt"]
    assert all(json.loads(a).startswith("Thank you so much for asking!") for a in friendly)
    assert answers["support_bots:faq_bot | terse.txt"] != answers["support_bots:faq_bot | friendly.txt"]
    assert statuses == [("scored",)]

    board = subprocess.run([CLI, "leaderboard", "--format", "json"], cwd=checkout, capture_output=True, text=True,
                           timeout=120, env=env, stdin=subprocess.DEVNULL)
    assert board.returncode == 0, board.stderr
    rows = json.loads(board.stdout)["rows"]
    assert {r["scorer"] for r in rows} == {"tone-scorer", "textual-difference-scorer", "answer-relevancy-scorer"}
    assert all(r["n"] == 24 for r in rows) and sum(r["baseline"] for r in rows) == 3
    assert all(r["latency_p50"] is not None for r in rows)
