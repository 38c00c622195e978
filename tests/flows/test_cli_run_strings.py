"""The end of `evalduck run` with a run name and item ids that look like rich markup: the run is stored,
its summary printed as typed, the exit status 0, and the closing hint a command that can be pasted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.store import Store

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.mark.parametrize(("name", "hint"), [
    ("gpt-4o [baseline]", "try `evalduck show 'gpt-4o [baseline]'`"),  # was shown as `gpt-4o `
    ("[/] x'; DROP TABLE runs; --", "try `evalduck show '[/] x'\"'\"'; DROP TABLE runs; --'`"),  # was exit 1
    ("bell\x07name", None),  # cannot be pasted as typed: the hint names the run by its id
])
def test_run_named_with_markup_ends_cleanly(tmp_path: Path, name: str, hint: str | None) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": i, "input": "Q?", "output": "A."}) + "\n" for i in ("[/]", "[b]x")))
    db = tmp_path / "evals.duckdb"
    result = CliRunner().invoke(app, ["--db", str(db), "run", str(data), "-s", "tone-scorer", "--name", name,
                                      "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output + repr(result.exception)
    (run_id, status), = Store(db).sql("SELECT run_id, status FROM runs").rows
    assert status == "completed"
    shown = name.replace("\x07", "\\x07")
    assert f"run {run_id} ({shown})" in result.stdout
    assert (hint or f"try `evalduck show {run_id}`") in result.stdout


def test_a_judge_nobody_answers_stops_the_cli_run_with_one_line(tmp_path: Path) -> None:
    """Through the installed script, as a user runs it: exit 1, one error line, no traceback."""
    import os
    import socket
    import subprocess
    import sys

    from prefect.settings import get_current_settings

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"id": f"i{n}", "input": "Q?", "output": "A."}) + "\n"
                                              for n in range(6)))
    env = {**os.environ, "PREFECT_API_URL": str(get_current_settings().api.url), "OPENAI_API_KEY": "sk-fake"}
    done = subprocess.run([str(Path(sys.executable).with_name("evalduck")), "run", "d.jsonl", "-s",
                           "answer-relevancy-scorer", "--judge-model", "openai/fake-judge", "--judge-api-base",
                           f"http://127.0.0.1:{port}/v1", "--judge-timeout", "30"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "stopped at its first configuration error" in done.stderr and "connection refused" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    ((status,),) = Store(tmp_path / "evals.duckdb").sql("SELECT status FROM runs").rows
    assert status == "failed"
