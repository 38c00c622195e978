"""`evalduck calibrate` and `compare --min-agreement` as a user runs them: the real `evalduck` command in a
subprocess, on the shipped labels of datasets/labels/, judged by fake judges over HTTP: one that reads the
rubric right, and one that reads "yes" the wrong way round (issue 26's small judge on hallucination)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalduck.flows.store import Store
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, NoisyOpenAIServer

CHECKOUT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("evalduck"))
LABELS = CHECKOUT / "datasets" / "labels" / "rag-hallucination.jsonl"


def _env() -> dict[str, str]:
    """The user's environment, recording to the session's Prefect server (a temporary one per command costs
    ~10 s each: tests/conftest.py's harness)."""
    from prefect.settings import get_current_settings

    environ = {k: v for k, v in os.environ.items() if k != "EVALDUCK_EPHEMERAL"}
    return {**environ, "OPENAI_API_KEY": "sk-fake-key-for-tests", "PREFECT_API_URL": str(get_current_settings().api.url)}


def evalduck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=180, env=_env(),
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def judges() -> Iterator[dict[str, str]]:
    """The two judges' api_base by name."""
    with FakeOpenAIServer() as good, NoisyOpenAIServer(flip_rate=1.0) as inverted:
        yield {"good": good.base_url, "inverted": inverted.base_url}


@pytest.fixture
def folder(tmp_path: Path, prefect_harness: None) -> Path:
    shutil.copy(CHECKOUT / "datasets" / "rag.jsonl", tmp_path / "rag.jsonl")
    return tmp_path


def _calibrate(folder: Path, judges: dict[str, str], judge: str) -> subprocess.CompletedProcess[str]:
    return evalduck(folder, "calibrate", str(LABELS), "-s", "hallucination-scorer", "--dataset", "rag.jsonl",
                    "--judge-model", f"openai/{judge}", "--judge-api-base", judges[judge])


def test_calibrate_exposes_a_judge_that_reads_yes_backwards_and_the_gate_refuses_it(
        folder: Path, judges: dict[str, str]) -> None:
    good = _calibrate(folder, judges, "good")
    assert good.returncode == 0, good.stderr
    assert "24 labelled cells" in good.stdout and "kappa" in good.stdout
    inverted = _calibrate(folder, judges, "inverted")
    assert inverted.returncode == 0, inverted.stderr
    store = Store(folder / "evals.duckdb")
    rows = {r["judge_model"]: r for r in store.sql(
        "SELECT judge_model, n, kappa, kappa_low, kappa_high, confusion, run_id FROM calibrations").records()}
    assert rows["openai/good"]["n"] == 24 and rows["openai/good"]["kappa_low"] >= 0.6
    assert rows["openai/inverted"]["kappa"] <= 0 and rows["openai/inverted"]["kappa_high"] < 0.6
    assert sum(map(sum, json.loads(rows["openai/inverted"]["confusion"]))) == 24

    # The calibrations' own runs, compared: the gate follows run B's judge.
    good_run, inverted_run = rows["openai/good"]["run_id"], rows["openai/inverted"]["run_id"]
    trusted = evalduck(folder, "compare", inverted_run, good_run, "--min-agreement", "0.6")
    assert trusted.returncode == 0, trusted.stderr
    # Two judges on the same outputs: how far they agree is said before the delta (item 5 of issue 26).
    assert trusted.stdout.startswith("hallucination-scorer: the judge changed (openai/inverted prompt ")
    assert "on the 24 cells with the same output they agree at kappa -" in trusted.stdout
    report = evalduck(folder, "report", good_run, "--against", inverted_run)
    assert report.returncode == 0, report.stderr
    page = next((folder / "reports").glob("*.html")).read_text(encoding="utf-8")
    assert 'class="note judge-change">hallucination-scorer: the judge changed (openai/inverted prompt ' in page
    refused = evalduck(folder, "compare", good_run, inverted_run, "--min-agreement", "0.6")
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: hallucination-scorer judged by openai/inverted: its calibration's kappa lower "
                           "bound") and "below --min-agreement 0.6" in line


def test_bad_labels_are_named_by_file_and_line(folder: Path) -> None:
    (folder / "bad.jsonl").write_text('{"id": "rag-01", "label": 1}\n{"id": "rag-02"}\n{"label": 0.5}\n'
                                      '{"id": "rag-01", "label": 0}\nnot json\n')
    done = evalduck(folder, "calibrate", "bad.jsonl", "-s", "hallucination-scorer", "--dataset", "rag.jsonl")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    for expected in ("bad.jsonl line 2: missing `label`", "bad.jsonl line 3: needs `id`, or `input` and `output`",
                     "bad.jsonl line 4: item rag-01 is labelled already at bad.jsonl line 1", "bad.jsonl line 5"):
        assert expected in done.stderr, done.stderr
    (folder / "verdicts.jsonl").write_text('{"id": "rag-01", "label": "no"}\n{"id": "rag-02", "label": "Yes"}\n'
                                           '{"id": "rag-03", "label": "maybe"}\n')
    unmapped = evalduck(folder, "calibrate", "verdicts.jsonl", "-s", "hallucination-scorer", "--dataset", "rag.jsonl",
                        "--category", "yes=1", "--category", "no=0")
    assert unmapped.returncode == 1
    assert ("verdicts.jsonl line 3: category 'maybe' has no score: give it one with --category maybe=SCORE"
            in unmapped.stderr)
    bad_option = evalduck(folder, "calibrate", "verdicts.jsonl", "-s", "hallucination-scorer", "--category", "yes")
    assert bad_option.returncode == 2 and "--category 'yes': must be NAME=SCORE" in bad_option.stderr
    ids_only = evalduck(folder, "calibrate", str(LABELS), "-s", "hallucination-scorer")
    assert ids_only.returncode == 2 and "give the dataset they are in with --dataset" in ids_only.stderr
