"""`evalduck sweep` and `evalduck leaderboard` as a user runs them: the real command in a subprocess, in a project
folder with its own targets module, recording to the session's Prefect server; the leaderboard's figures
checked against an independent computation from the stored rows (DuckDB and scipy)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest
from scipy import stats

CLI = str(Path(sys.executable).with_name("evalduck"))
QUESTIONS = ["Can I return it?", "Is the shop open on Sunday?", "Do you ship abroad?", "How long is the warranty?",
             "Can I pay by card?", "Where is my order?", "Is it waterproof?", "Does it come in blue?"]
TARGETS = '''\
import os, pathlib, time

def terse(question):
    return "Yes."

def warm(question):
    if len(question) % 2:
        return "Thank you so much for asking! I'm delighted to help: yes, absolutely."
    return "No. That is not possible, sorry."

def slow(question):
    calls = pathlib.Path(os.environ["CALLS_FILE"])
    with calls.open("a") as f:
        f.write(question + "\\n")
    time.sleep(0.4)
    return "Fine."

def slower(question):
    return slow(question) + " Really."
'''


def _env(**extra: str) -> dict[str, str]:
    """The user's environment, recording to the session's Prefect server (tests/conftest.py's harness)."""
    from prefect.settings import get_current_settings

    environ = {k: v for k, v in os.environ.items() if k != "EVALDUCK_EPHEMERAL"}
    return {**environ, "PREFECT_API_URL": str(get_current_settings().api.url), **extra}


def evalduck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=_env(),
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def folder(tmp_path: Path, prefect_harness: None) -> Path:
    (tmp_path / "targets.py").write_text(TARGETS)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "input": q}) + "\n"
                                                 for i, q in enumerate(QUESTIONS)))
    return tmp_path


def _stored(folder: Path, query: str, *args: object) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(folder / "evals.duckdb"), read_only=True)
    try:
        return con.execute(query, list(args)).fetchall()
    finally:
        con.close()


def test_a_sweep_runs_each_candidate_and_its_leaderboard_matches_the_stored_rows(folder: Path) -> None:
    (folder / "sweep.yaml").write_text(
        "name: tone-check\nbase:\n  dataset: data.jsonl\n  scorers: [tone-scorer]\n"
        "axes:\n  target: [\"targets:terse\", \"targets:warm\"]\nrepeat: 2\n")
    done = evalduck(folder, "sweep", "sweep.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 candidate(s) x 2 run(s), baseline targets:terse" in done.stderr
    assert "leaderboard: tone-check" in done.stdout and "completed; results in" in done.stdout
    runs = _stored(folder, "SELECT name, candidate, sweep_repeat, status FROM runs ORDER BY candidate, sweep_repeat")
    assert runs == [("tone-check/targets:terse #1", "targets:terse", 0, "completed"),
                    ("tone-check/targets:terse #2", "targets:terse", 1, "completed"),
                    ("tone-check/targets:warm #1", "targets:warm", 0, "completed"),
                    ("tone-check/targets:warm #2", "targets:warm", 1, "completed")]
    assert _stored(folder, "SELECT name, baseline, status FROM sweeps") == [("tone-check", "targets:terse", "completed")]
    # The independent computation: per item the mean over each candidate's two runs, then scipy's paired t-test.
    cells = dict(((c, i), s) for c, i, s in _stored(
        folder, "SELECT r.candidate, s.item_id, avg(s.score) FROM scores s JOIN runs r USING (run_id) GROUP BY ALL"))
    items = sorted({i for _, i in cells})
    base = [cells["targets:terse", i] for i in items]
    warm = [cells["targets:warm", i] for i in items]
    diffs = [w - b for w, b in zip(warm, base, strict=True)]
    low, high = stats.t.interval(0.95, len(diffs) - 1, loc=sum(diffs) / len(diffs), scale=stats.sem(diffs))

    board = evalduck(folder, "leaderboard", "--format", "json")
    assert board.returncode == 0, board.stderr
    doc = json.loads(board.stdout)
    assert doc["format"] == "evalduck.leaderboard/1" and doc["name"] == "tone-check" and doc["status"] == "completed"
    rows = {r["candidate"]: r for r in doc["rows"]}
    assert rows["targets:terse"]["baseline"] and rows["targets:terse"]["delta"] is None
    delta = rows["targets:warm"]["delta"]
    assert delta["n"] == len(QUESTIONS)
    assert delta["delta"] == pytest.approx(sum(diffs) / len(diffs))
    assert (delta["low"], delta["high"]) == pytest.approx((low, high))
    assert delta["p"] == pytest.approx(stats.ttest_rel(warm, base).pvalue)
    assert delta["p_holm"] == pytest.approx(delta["p"])  # one comparison: Holm changes nothing
    assert (delta["wins"], delta["ties"], delta["losses"]) == (
        sum(d > 0 for d in diffs), sum(d == 0 for d in diffs), sum(d < 0 for d in diffs))
    assert rows["targets:warm"]["mean"] == pytest.approx(sum(warm) / len(warm))
    # The target's latency: every answer timed and stored; p50 / p95 interpolated as numpy's default does.
    for candidate in ("targets:terse", "targets:warm"):
        seconds = [s for (s,) in _stored(folder, "SELECT i.target_latency_s FROM items i JOIN runs r USING (run_id) "
                                                 "WHERE r.candidate = ?", candidate)]
        assert len(seconds) == 2 * len(QUESTIONS) and all(s is not None and s >= 0 for s in seconds)
        assert rows[candidate]["latency_p50"] == pytest.approx(float(np.percentile(seconds, 50)))
        assert rows[candidate]["latency_p95"] == pytest.approx(float(np.percentile(seconds, 95)))
    best = [r["candidate"] for r in doc["rows"] if r["best"]]
    assert best == [max(("targets:terse", base), ("targets:warm", warm), key=lambda p: sum(p[1]))[0]]

    markdown = evalduck(folder, "leaderboard", "tone-check", "--format", "markdown")
    assert markdown.returncode == 0 and "### tone-scorer" in markdown.stdout and "| best |" in markdown.stdout
    unknown = evalduck(folder, "leaderboard", "nope")
    assert unknown.returncode == 2 and "no sweep has that id or name; the newest: tone-check" in unknown.stderr


def test_a_bad_sweep_file_stops_before_anything_runs(folder: Path) -> None:
    (folder / "sweep.yaml").write_text("base:\n  dataset: data.jsonl\n  scorers: [tone-scorer]\n"
                                       "axes:\n  target: []\n  concurrency: [1, 2]\ncolour: red\n")
    done = evalduck(folder, "sweep", "sweep.yaml")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "sweep.yaml line 7: colour: unknown field" in done.stderr
    assert "Prefect" not in done.stderr and not (folder / "evals.duckdb").exists()


def test_a_cancelled_sweep_is_paired_and_resumes_with_every_cell_once(folder: Path) -> None:
    """Ctrl-C part-way: the candidates ran side by side under the one shared slot (concurrency 1), taking turns,
    so each has scored the same first items, give or take the one in flight; `--resume latest` finishes each run
    with every cell once, and asks no item it had scored again."""
    (folder / "sweep.yaml").write_text(
        "name: slow\nbase:\n  dataset: data.jsonl\n  scorers: [tone-scorer]\n  concurrency: 1\n"
        "candidates:\n  - {label: a, target: \"targets:slow\"}\n  - {label: b, target: \"targets:slower\"}\n"
        "  - {label: c, target: \"targets:terse\"}\n")
    calls = folder / "calls.txt"
    proc = subprocess.Popen([CLI, "sweep", "sweep.yaml"], cwd=folder, env=_env(CALLS_FILE=str(calls)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while (not calls.exists() or len(calls.read_text().splitlines()) < 6) and proc.poll() is None:
        assert time.monotonic() < deadline, "the sweep never got going"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert "--resume latest` finishes it" in err
    assert _stored(folder, "SELECT status FROM sweeps") == [("cancelled",)]
    assert _stored(folder, "SELECT candidate, status FROM runs ORDER BY candidate") == [
        ("a", "cancelled"), ("b", "cancelled"), ("c", "cancelled")]
    # What each candidate's target answered (its items' timed answers; the tone scores follow in chunks).
    scored = dict(_stored(folder, "SELECT r.candidate, count(i.target_latency_s) FROM runs r LEFT JOIN items i "
                                  "USING (run_id) GROUP BY ALL"))
    assert 2 <= min(scored.values()) and max(scored.values()) - min(scored.values()) <= 1, scored
    assert max(scored.values()) < len(QUESTIONS)
    asked_before = len(calls.read_text().splitlines())

    done = subprocess.run([CLI, "sweep", "sweep.yaml", "--resume", "latest"], cwd=folder, capture_output=True,
                          text=True, timeout=300, env=_env(CALLS_FILE=str(calls)), stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _stored(folder, "SELECT status FROM sweeps") == [("completed",)]
    assert _stored(folder, "SELECT candidate, count(*), min(status) FROM runs GROUP BY ALL ORDER BY ALL") == [
        ("a", 1, "completed"), ("b", 1, "completed"), ("c", 1, "completed")]
    assert _stored(folder, "SELECT count(*), count(DISTINCT (run_id, item_id)) FROM scores") == [
        (3 * len(QUESTIONS), 3 * len(QUESTIONS))]
    # Only what was not scored was asked again (an answer cut off in flight at most once more per run).
    asked_after = len(calls.read_text().splitlines()) - asked_before
    assert asked_after <= 2 * len(QUESTIONS) - scored["a"] - scored["b"] + 2


def test_run_sweep_from_python_c(folder: Path) -> None:
    """The Python API in a plain `python -c`, as a user's script calls it."""
    (folder / "sweep.yaml").write_text("base:\n  dataset: data.jsonl\n  scorers: [tone-scorer]\n"
                                       "candidates:\n  - {target: \"targets:terse\"}\n  - {target: \"targets:warm\"}\n")
    code = ("import sys; sys.path.insert(0, '.'); from evalduck import run_sweep; r = run_sweep('sweep.yaml'); "
            "print(r.status, r.baseline, [x.candidate for x in r.runs])")
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=300,
                          env=_env(), stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "completed targets:terse ['targets:terse', 'targets:warm']" in done.stdout


def test_a_dask_sweep_runs_every_candidate_on_one_local_cluster(folder: Path) -> None:
    """With runner 'dask' and no address, the sweep starts one LocalCluster, and every candidate's run uses it
    (its address in each run's stored options), rather than a cluster per run."""
    (folder / "sweep.yaml").write_text(
        "name: on-dask\nbase:\n  dataset: data.jsonl\n  scorers: [tone-scorer]\n"
        "axes:\n  target: [\"targets:terse\", \"targets:warm\"]\n")
    bad = evalduck(folder, "sweep", "sweep.yaml", "--runner", "spark")
    assert bad.returncode == 2 and "error: --runner: Input should be 'local' or 'dask'" in bad.stderr, bad.stderr
    assert not (folder / "evals.duckdb").exists()
    done = evalduck(folder, "sweep", "sweep.yaml", "--runner", "dask", "--workers", "1")  # over the file's base
    assert done.returncode == 0, done.stdout + done.stderr
    runs = _stored(folder, "SELECT candidate, status, config->>'$.runner', config->>'$.dask_address' FROM runs "
                           "ORDER BY candidate")
    assert [(c, s, r) for c, s, r, _ in runs] == [("targets:terse", "completed", "dask"),
                                                  ("targets:warm", "completed", "dask")]
    addresses = {a for *_, a in runs}
    assert len(addresses) == 1 and next(iter(addresses)).startswith("tcp://127.0.0.1:")
    assert _stored(folder, "SELECT count(*) FROM scores WHERE status = 'scored'") == [(2 * len(QUESTIONS),)]
