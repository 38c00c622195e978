"""`run_evals` from a plain script (no `__main__` guard), each in a real subprocess, as a user runs it: its
result holds exact means (SQL avg over the scored cells), it prints what the CLI prints and no Prefect INFO
line, and `quiet=True` prints nothing on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

# Tone scores whose mean has more than 3 decimals (checked below against the database).
OUTPUTS = ["Great, thanks a lot!", "This is awful and bad.", "ok fine", "I love it, wonderful", "meh", "Terrible!!"]
SCRIPT = """\
import json, os, sys
from evalduck.flows import run_evals
rows = [{"id": f"i{n}", "input": "q", "output": text} for n, text in enumerate(json.loads(os.environ["OUTPUTS"]))]
result = run_evals(rows, scorers=["tone-scorer", "textual-difference-scorer"], db="evals.duckdb",
                   cache_dir="cache", name="api", report=False, quiet=bool(os.environ.get("QUIET")))
sys.stderr.write("RESULT=" + json.dumps({"run_id": result.run_id, "scores": result.scores,
                                         "summary": result.summary}) + "\\n")
"""


def _run(folder: Path, quiet: bool, api_url: str | None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    (folder / "user_script.py").write_text(SCRIPT)
    env = {**os.environ, "OUTPUTS": json.dumps(OUTPUTS), "QUIET": "1" if quiet else ""}
    env.pop("PREFECT_API_URL", None)
    if api_url:
        env["PREFECT_API_URL"] = api_url
    proc = subprocess.run([sys.executable, "user_script.py"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(line for line in proc.stderr.splitlines() if line.startswith("RESULT="))
    return proc, json.loads(line.removeprefix("RESULT="))


@pytest.fixture(scope="module")
def api_url(prefect_harness: None) -> Iterator[str]:
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    assert url, "the Prefect test harness has no API URL"
    yield str(url)


def _no_prefect_info(text: str) -> None:
    assert "| INFO" not in text and "Beginning flow run" not in text and "temporary server" not in text, text


def test_quiet_prints_nothing_and_the_scores_are_exact(tmp_path: Path, api_url: str) -> None:
    proc, result = _run(tmp_path, quiet=True, api_url=api_url)
    assert proc.stdout == ""
    _no_prefect_info(proc.stderr)
    with duckdb.connect(str(tmp_path / "evals.duckdb"), read_only=True) as con:
        means = dict(con.execute("SELECT scorer_id, avg(score) FROM scores WHERE run_id = ? AND status = 'scored' "
                                 "GROUP BY scorer_id", [result["run_id"]]).fetchall())
    assert round(means["tone-scorer"], 3) != means["tone-scorer"]  # the check below can tell rounding apart
    assert result["scores"] == means
    assert {s: v["mean"] for s, v in result["summary"]["scorers"].items()} == means


def test_prints_the_summary_and_no_prefect_info_line(tmp_path: Path, api_url: str) -> None:
    proc, result = _run(tmp_path, quiet=False, api_url=api_url)
    assert "tone-scorer" in proc.stdout and f"{result['scores']['tone-scorer']:.3f}" in proc.stdout
    assert "results in " in proc.stdout and "flow run: " in proc.stdout
    _no_prefect_info(proc.stdout + proc.stderr)


def test_on_prefects_temporary_server_its_start_and_stop_lines_are_held_back(tmp_path: Path) -> None:
    """No server configured: Prefect starts its own, and logs at INFO when it starts and (at exit) stops."""
    proc, _ = _run(tmp_path, quiet=False, api_url=None)
    assert "tone-scorer" in proc.stdout and "flow run: " not in proc.stdout  # that server is gone at exit
    _no_prefect_info(proc.stdout + proc.stderr)
