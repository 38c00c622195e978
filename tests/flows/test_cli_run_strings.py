"""The end of `evalduck run` with a run name and item ids that look like rich markup: the run is stored,
its summary printed as typed, the exit status 0, and the closing hint a command that can be pasted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalduck.flows.cli import app
from evalduck.flows.store import Store

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


def test_each_scorer_says_what_it_measures_in_the_summary_show_and_the_report(tmp_path: Path) -> None:
    """Issue 23: the demo's tone scores (an empty answer 1.000, a hostile one 0.961) read as wrong without a line
    saying that tone is not quality. The run's summary, `evalduck show` and the report give each scorer's line
    and its direction: prebuilt ones (answer relevancy too, skipped for want of a judge model), and a custom
    scorer's own description."""
    import os
    import subprocess
    import sys

    from markupsafe import escape
    from prefect.settings import get_current_settings

    from evalduck.flows.report.measures import measures_line
    from evalduck.scorers import PREBUILT

    (tmp_path / "mine.py").write_text(
        "from evalduck.scorers import create_scorer\n"
        "short = create_scorer('short-answer', generate_score=lambda ctx: float(len(str(ctx.run.output)) < 200),\n"
        "                      description='1 when the answer is under 200 characters, else 0')\n")
    demo = Path(__file__).resolve().parents[2] / "datasets" / "demo.jsonl"
    script = str(Path(sys.executable).with_name("evalduck"))
    env = {**os.environ, "PREFECT_API_URL": str(get_current_settings().api.url)}
    env.pop("EVALDUCK_JUDGE_MODEL", None)
    done = subprocess.run([script, "run", str(demo), "--name", "demo", "-s", "tone-scorer", "-s", "textual-difference-scorer",
                           "-s", "answer-relevancy-scorer", "-s", "mine:short"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = subprocess.run([script, "show", "demo", "--worst", "0"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    (report,) = (tmp_path / "reports").glob("demo-*.html")
    page = report.read_text()
    lines = {sid: measures_line(PREBUILT[sid].description, True)
             for sid in ("tone-scorer", "textual-difference-scorer", "answer-relevancy-scorer")}
    lines["short-answer"] = "1 when the answer is under 200 characters, else 0; higher is better"
    assert "tone, not quality; higher is better" in lines["tone-scorer"]
    for sid, line in lines.items():
        for where, text in (("summary", done.stdout), ("show", shown.stdout)):
            assert f"{sid} {line}" in " ".join(text.split()), (where, sid, text)
        assert f"<dt><code>{sid}</code></dt><dd>{escape(line)}</dd>" in page, sid
