"""Custom scorers by import path: from the CLI in a real subprocess (a module in the run's folder), and with
options from a config spec, through the registry (evalduck.scorers.load_scorer does the importing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from evalduck.flows.config import EvalConfig
from evalduck.flows.inputs.registry import build_scorers

USER_MODULE = """\
from evalduck.scorers import JudgePrompt, create_scorer
from pydantic import BaseModel

strict_tone = create_scorer("strict-tone", version="2",
                            generate_score=lambda ctx: 0.0 if "!" in str(ctx.run.output) else 1.0)


def shouting(options=None):
    \"\"\"A factory (called with the spec's options, or none): the share of capitals, lower is better.\"\"\"
    scale = (options or {}).get("scale", 1.0)
    def score(ctx):
        text = str(ctx.run.output)
        return scale * sum(c.isupper() for c in text) / max(1, len(text))
    return create_scorer("shouting", generate_score=score, higher_is_better=False, options={"scale": scale})


class Verdict(BaseModel):
    ok: bool


def judged(options=None):
    options = options or {}
    return create_scorer("my-judge", version="3", judge={"model": options["model"]},
                         analyze=JudgePrompt(prompt=lambda ctx: "ok?", output_model=Verdict),
                         generate_score=lambda ctx: float(ctx.results["analyze"]["ok"]))


judged.scorer_id, judged.version, judged.needs_judge = "my-judge", "3", True
"""


def test_import_path_scorers_from_the_cli(prefect_harness: None, tmp_path: Path) -> None:
    from prefect.settings import get_current_settings

    (tmp_path / "my_evals.py").write_text(USER_MODULE)
    rows = [{"id": "a", "input": "q", "output": "Fine."}, {"id": "b", "input": "q", "output": "NO WAY!"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EVALDUCK_JUDGE_MODEL", "OPENAI_API_BASE")}
    env["PREFECT_API_URL"] = str(get_current_settings().api.url)
    command = [str(Path(sys.executable).with_name("evalduck")), "--db", "evals.duckdb", "run", "data.jsonl",
               "-s", "my_evals:strict_tone", "-s", "my_evals:shouting", "-s", "my_evals:judged", "--cache-dir", "cache"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shouting (lower is better)" in done.stdout
    assert "my-judge skipped: no judge model. Set EVALDUCK_JUDGE_MODEL" in done.stdout + done.stderr
    with duckdb.connect(str(tmp_path / "evals.duckdb"), read_only=True) as con:
        cells = con.execute("SELECT scorer_id, item_id, scorer_version, status, score FROM scores ORDER BY 1, 2").fetchall()
        directions = con.execute("SELECT scorer_id, higher_is_better FROM run_scorers ORDER BY 1").fetchall()
        (config,) = con.execute("SELECT config FROM runs").fetchone()
    assert cells[:2] == [("my-judge", "a", "3", "skipped", None), ("my-judge", "b", "3", "skipped", None)]
    assert cells[2][:4] == ("shouting", "a", "1", "scored") and cells[3][4] == pytest.approx(5 / 7)
    assert cells[4:] == [("strict-tone", "a", "2", "scored", 1.0), ("strict-tone", "b", "2", "scored", 0.0)]
    assert directions == [("my-judge", True), ("shouting", False), ("strict-tone", True)]
    assert {s["id"] for s in json.loads(config)["scorers"]} == {"my_evals:strict_tone", "my_evals:shouting",
                                                               "my_evals:judged"}
    assert {(s["id"], s["version"]) for s in json.loads(config)["run_scorers"]} == {
        ("strict-tone", "2"), ("shouting", "1"), ("my-judge", "3")}


def test_import_path_specs_take_options_and_a_judge_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The config's and UI form's `{"id": "module:attribute", "options": {...}}`; a needs_judge factory gets the
    run's judge model as a prebuilt judge scorer does; a Scorer object takes no options."""
    (tmp_path / "my_evals_opts.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALDUCK_JUDGE_MODEL", raising=False)
    config = EvalConfig(dataset="d.jsonl", scorers=[{"id": "my_evals_opts:shouting", "options": {"scale": 2.0}},
                                                    "my_evals_opts:judged"])
    built, skipped = build_scorers(config.scorers, judge_model="openai/fake-judge")
    assert [(s.id, dict(s.options), s.higher_is_better) for s in built][0] == ("shouting", {"scale": 2.0}, False)
    assert built[1].id == "my-judge" and built[1].judge is not None and built[1].judge.model == "openai/fake-judge"
    assert skipped == []
    with pytest.raises(ValueError, match=r"is a Scorer, built already: it takes no options"):
        build_scorers([{"id": "my_evals_opts:strict_tone", "options": {"x": 1}}])
    with pytest.raises(ValueError, match=r"module 'my_evals_opts' has no attribute 'nope'"):
        build_scorers(["my_evals_opts:nope"])


LIMITED = """\
from evalduck.scorers import create_scorer
from helper import short

LIMIT = {limit}


def score(ctx):
    return 1.0 if short(str(ctx.run.output), LIMIT) else 0.0


limited = create_scorer("limited", generate_score=score)
"""


def _limited_project(tmp_path: Path) -> tuple[dict[str, str], list[str]]:
    """``my_evals.py`` (LIMIT = 3) importing ``helper.py``, a 4-row dataset, and the `evalduck run` command
    (with its environment: the test harness's server) that scores it with ``my_evals:limited``."""
    from prefect.settings import get_current_settings

    (tmp_path / "helper.py").write_text("def short(text, limit):\n    return len(text) <= limit\n")
    (tmp_path / "my_evals.py").write_text(LIMITED.format(limit=3))
    rows = [{"id": str(i), "input": "q", "output": "x" * n} for i, n in enumerate((2, 5, 8, 9))]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EVALDUCK_JUDGE_MODEL", "OPENAI_API_BASE")}
    env["PREFECT_API_URL"] = str(get_current_settings().api.url)
    command = [str(Path(sys.executable).with_name("evalduck")), "--db", "evals.duckdb", "run", "data.jsonl",
               "-s", "my_evals:limited", "--cache-dir", "cache"]
    return env, command


def test_an_edited_custom_scorer_module_or_its_helper_reruns(prefect_harness: None, tmp_path: Path) -> None:
    """Issue 24: a changed constant beside an unchanged function, or an edit in a module the scorer module
    imports, changes the score on the next run (no ``version=`` bump, no ``--no-cache``)."""
    env, command = _limited_project(tmp_path)

    def mean() -> float:
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
        assert done.returncode == 0, done.stdout + done.stderr
        with duckdb.connect(str(tmp_path / "evals.duckdb"), read_only=True) as con:
            (run_id,) = con.execute("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
            return con.execute("SELECT avg(score) FROM scores WHERE run_id = ?", [run_id]).fetchone()[0]

    assert mean() == pytest.approx(0.25)
    (tmp_path / "my_evals.py").write_text(LIMITED.format(limit=6))
    assert mean() == pytest.approx(0.5)  # the constant's edit re-ran the step
    (tmp_path / "helper.py").write_text("def short(text, limit):\n    return len(text) <= 2 * limit\n")
    assert mean() == pytest.approx(1.0)  # so did the helper's


def test_explain_cache_names_the_edited_file(prefect_harness: None, tmp_path: Path) -> None:
    """Issue 24: `evalduck run --explain-cache` twice: all hits; then a constant edited in my_evals.py, and a
    helper module it imports: the step's misses name `code` and the file."""
    import re

    env, command = _limited_project(tmp_path)
    command.append("--explain-cache")

    def explained() -> str:
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "step cache (--explain-cache)" in done.stdout, done.stdout
        (row,) = [line for line in done.stdout.splitlines() if "limited.generate_score" in line]
        return re.sub(r"\s*│\s*", "|", row).strip("|")

    assert explained() == "limited.generate_score|0|4|never computed before: 4"
    assert explained() == "limited.generate_score|4|0"
    (tmp_path / "my_evals.py").write_text(LIMITED.format(limit=6))
    assert explained() == "limited.generate_score|0|4|code (my_evals.py): 4"
    (tmp_path / "helper.py").write_text("def short(text, limit):\n    return len(text) <= 2 * limit\n")
    assert explained() == "limited.generate_score|0|4|code (helper.py): 4"
    assert len(list((tmp_path / "cache" / "keys").glob("limited.generate_score-*.json"))) == 1  # the step's record
