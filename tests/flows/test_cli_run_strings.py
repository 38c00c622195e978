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
