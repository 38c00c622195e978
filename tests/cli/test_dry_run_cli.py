"""`evalduck run ... --dry-run` as a user runs it: the real command in a subprocess, in a folder of its own, with no
Prefect server named (a run would start one). The preflight starts none (it says nothing of Prefect), makes no
results file and no cache folder, asks the judge nothing, prints its table, or JSON with `--format json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

CLI = str(Path(sys.executable).with_name("evalduck"))


def evalduck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**environ, "OPENAI_API_KEY": "sk-fake-key-for-tests"},
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    rows = [{"id": f"q{i}", "input": f"Is shop {i} open on Sunday?", "output": f"Shop {i} opens at ten. It closes at six."}
            for i in range(5)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def _args(judge: FakeOpenAIServer, *more: str) -> list[str]:
    return ["--db", "evals.duckdb", "run", "data.jsonl", "-s", "answer-relevancy-scorer", "-s", "tone-scorer",
            "--judge-model", "openai/fake-judge", "--judge-api-base", judge.base_url, "--cache-dir", "cache",
            "--dry-run", *more]


def _nothing_made(folder: Path) -> None:
    assert not (folder / "evals.duckdb").exists() and not (folder / "cache").exists()
    assert not (folder / ".evalduck").exists()  # no local Prefect server started, nothing recorded for the folder


def test_dry_run_json_for_scripts(folder: Path) -> None:
    with FakeOpenAIServer() as judge:
        done = evalduck(folder, *_args(judge, "--format", "json"))
        assert judge.request_count == 0
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    lines = {line["name"]: line for line in found["lines"]}
    assert (found["items"], found["cells"], found["requests"], found["cached"]) == (5, 10, 15, 0)
    relevancy = lines["answer-relevancy-scorer"]
    assert (relevancy["requests"], relevancy["to_send"], relevancy["price"]) == (15, 15, "unknown price")
    assert relevancy["prompt_tokens"] > 0 and relevancy["completion_tokens"] == 15 * 150  # the stated default
    assert lines["tone-scorer"]["kind"] == "code" and found["unknown_price"] == ["openai/fake-judge"]
    _nothing_made(folder)


def test_dry_run_table(folder: Path) -> None:
    with FakeOpenAIServer() as judge:
        done = evalduck(folder, *_args(judge))
    assert done.returncode == 0, done.stderr
    assert "Dry run" in done.stdout and "answer-relevancy-scorer" in done.stdout and "unknown price" in done.stdout
    assert "Prefect" not in done.stderr
    _nothing_made(folder)


def test_format_without_dry_run_and_a_bad_format_are_usage_errors(folder: Path) -> None:
    with FakeOpenAIServer() as judge:
        no_dry = evalduck(folder, *[a for a in _args(judge, "--format", "json") if a != "--dry-run"])
        bad = evalduck(folder, *_args(judge, "--format", "yaml"))
    assert no_dry.returncode == 2 and "--format applies to --dry-run" in no_dry.stderr
    assert bad.returncode == 2 and "--format must be one of table, json" in bad.stderr
    _nothing_made(folder)


def test_a_dry_run_checks_what_the_run_checks(folder: Path) -> None:
    """A bad row is the run's error (exit 1), and a resume of a run in no results file is refused."""
    (folder / "data.jsonl").write_text('{"input": "no output"}\n')
    with FakeOpenAIServer() as judge:
        bad_rows = evalduck(folder, *_args(judge))
        (folder / "data.jsonl").write_text('{"input": "a", "output": "b"}\n')
        resume = evalduck(folder, *_args(judge, "--resume", "nightly"))
    assert bad_rows.returncode == 1 and "missing `output`" in bad_rows.stderr
    assert resume.returncode != 0 and "no results file" in resume.stderr
    _nothing_made(folder)
