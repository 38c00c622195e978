"""The shared store (a DuckLake on a real PostgreSQL, Parquet files in a temp folder) under concurrent writers.

Run by `make test-shared` (.venv-shared: duckdb 1.5.5 with its extensions); skipped by `make test`.
One PostgreSQL for the module; each test its own database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_harness import postgres_server
from test_schema import V3_RUNS

from evalduck.flows.report.html import write_report
from evalduck.flows.store import ScoreRow, Store, lake
from evalduck.flows.store import runs as runs_module
from evalduck.flows.store import schema as schema_module
from evalduck.flows.store import store as store_module
from evalduck.flows.store.schema import SCHEMA_VERSION, migrate
from evalduck.flows.store.target import parse_target

pytestmark = pytest.mark.shared
WORKER = Path(__file__).with_name("proc_worker.py")
N_ITEMS = 24  # x 2 scorers (proc_worker.SCORERS)


@pytest.fixture(scope="module")
def pg() -> Iterator[str]:
    with postgres_server(databases=("race", "overlap", "start", "late", "shell", "refuse", "v4", "cli")) as url:
        yield url


def lake_url(pg: str, database: str, data: Path) -> str:
    return "ducklake:postgres://" + pg.split("://", 1)[1] + f"/{database}?data_path={data}/"


def _writers(*argv: tuple[str, ...]) -> list[str]:
    procs = [subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for args in argv]
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
        outs.append(out)
    return outs


def test_two_writers_of_one_run_and_a_third_write_every_cell_once(pg: str, tmp_path: Path) -> None:
    """Three processes open a fresh lake at once (migrating it together), two of them write every cell of
    the same run in overlapping batches, the third another run: one row per cell, one per run, one per
    schema version."""
    url = lake_url(pg, "race", tmp_path / "data")
    _writers(("write", url, "same", str(N_ITEMS), "10"), ("write", url, "same", str(N_ITEMS), "14"),
             ("write", url, "other", str(N_ITEMS), "16"))
    store = Store(url)
    cells = store.sql("SELECT run_id, count(*), count(DISTINCT (item_id, scorer_id)) FROM scores GROUP BY run_id "
                      "ORDER BY run_id").rows
    assert cells == [("other", 2 * N_ITEMS, 2 * N_ITEMS), ("same", 2 * N_ITEMS, 2 * N_ITEMS)]
    items = store.sql("SELECT run_id, count(*), count(DISTINCT item_id) FROM items GROUP BY run_id ORDER BY run_id").rows
    assert items == [("other", N_ITEMS, N_ITEMS), ("same", N_ITEMS, N_ITEMS)]
    assert store.sql("SELECT run_id, count(*), max(status) FROM runs GROUP BY run_id ORDER BY run_id").rows == [
        ("other", 1, "completed"), ("same", 1, "completed")]
    versions = store.sql("SELECT version, count(*) FROM schema_version GROUP BY version ORDER BY version").rows
    assert [count for _, count in versions] == [1] * len(versions) and versions[-1][0] == store.migrated_from
    assert list((tmp_path / "data").rglob("*.parquet")), "no Parquet file under the data path"


def _overlap(monkeypatch: pytest.MonkeyPatch, function: str, writes: list[Callable[[], object]],
             when: Callable[..., bool] = lambda *args: True, module: Any = store_module) -> None:
    """Each of `writes` in its own thread, pausing after its first call of `module`'s `function` (store.py's by
    default; that `when` accepts) until every one has made it: their transactions overlap before any commits. A
    retry goes straight on."""
    real = getattr(module, function)
    both_done = threading.Barrier(len(writes), timeout=60)
    waited: list[str] = []

    def then_wait(*args: Any) -> None:
        real(*args)
        if when(*args) and len(waited) < len(writes):
            waited.append(function)
            both_done.wait()

    monkeypatch.setattr(module, function, then_wait)
    errors: list[BaseException] = []

    def run(write: Callable[[], object]) -> None:
        try:
            write()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(write,)) for write in writes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert len(waited) == len(writes), "the writes did not overlap"


def test_two_overlapping_writes_of_one_new_cell_leave_one_row(pg: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The interleaving that duplicates a cell without the write token, made certain: two transactions each
    upsert the same new cell and wait for each other before either commits (DuckLake lets two inserts commit
    together; the token makes the second commit conflict, and its retry replaces the first one's row)."""
    store = Store(lake_url(pg, "overlap", tmp_path / "data"))
    store.start_run("r", "r", "d.jsonl", "h", {})

    def write(score: float) -> Callable[[], object]:
        return lambda: store.write_batch("r", scores=[ScoreRow(run_id="r", item_id="i", scorer_id="tone",
                                                               scorer_version="1", score=score)])

    _overlap(monkeypatch, "upsert", [write(0.25), write(0.75)], when=lambda con, table, *rest: table == "scores")
    rows = store.sql("SELECT score FROM scores WHERE run_id = 'r'").rows
    assert len(rows) == 1 and rows[0][0] in (0.25, 0.75), rows


def test_two_overlapping_starts_of_one_run_record_it_and_its_scorers_once(pg: str, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes starting (or resuming) one run at once, their transactions overlapping after each wrote
    the run and its run_scorers: one run row, one row per scorer with the later start's direction."""
    store = Store(lake_url(pg, "start", tmp_path / "data"))

    def start(directions: dict[str, bool]) -> Callable[[], object]:
        return lambda: store.start_run("r", "r", "d.jsonl", "h", {}, directions=directions)

    _overlap(monkeypatch, "replace_run_rows", [start({"tone": True, "bias": False}), start({"tone": True, "bias": True})],
             module=runs_module)  # a run's lifecycle rows are written by store/runs.py
    assert store.sql("SELECT count(*) FROM runs").rows == [(1,)]
    rows = store.sql("SELECT scorer_id, higher_is_better FROM run_scorers ORDER BY scorer_id").rows
    assert rows in ([("bias", False), ("tone", True)], [("bias", True), ("tone", True)]), rows


def test_a_v3_lake_is_upgraded_and_v4_reads_and_the_report_work_on_it(pg: str, tmp_path: Path, add_run: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """v4 through the lake: the migration fills run_scorers from a v3 lake's cells; a run's scorers and their
    direction are recorded at its start and replaced on resume; compare_runs, item_deltas and worst_items
    follow a lower-is-better scorer; skipped_reasons; the report, read on the store's own connection and
    written to reports/ in the working directory (the lake has no file to sit beside)."""
    url = lake_url(pg, "v4", tmp_path / "data")
    target = parse_target(url)
    with lake.session(target) as con:
        migrate(con, target.label, "0.1.0", target=3)
        con.execute(V3_RUNS)
    store = Store(url)
    assert store.migrated_from == 3
    assert store.sql("SELECT run_id, scorer_id, higher_is_better FROM run_scorers ORDER BY ALL").rows == [
        ("a", "tone-scorer", True), ("b", "tone-scorer", True)]
    directions = {"tone-scorer": True, "bias-scorer": False}
    add_run(store, "c", {"tone-scorer": {"i1": 0.5, "i2": 0.6}, "bias-scorer": {"i1": 0.1, "i2": 0.2}}, name="n",
             directions=directions)
    add_run(store, "d", {"tone-scorer": {"i1": 0.7, "i2": None}, "bias-scorer": {"i1": 0.4, "i2": 0.6}}, name="n",
             minutes=1, directions=directions)
    store.write_scores("d", [ScoreRow(run_id="d", item_id="i2", scorer_id="tone-scorer", scorer_version="1",
                                      status="skipped", reason="no context")])
    bias = next(row for row in store.compare("c", "d") if row["scorer_id"] == "bias-scorer")
    assert (bias["higher_is_better"], bias["n_regressed"], bias["n_improved"]) == (False, 2, 0)
    assert [(r["item_id"], round(r["gain"], 6)) for r in store.item_deltas("c", "d", "bias-scorer")] == [
        ("i2", -0.4), ("i1", -0.3)]
    assert [r["item_id"] for r in store.worst_items("d") if r["scorer_id"] == "bias-scorer"] == ["i2", "i1"]
    assert store.skipped_reasons("d") == [{"scorer_id": "tone-scorer", "reason": "no context", "cells": 1}]
    for _ in range(2):  # resumed twice, the second time with one scorer less
        store.start_run("d", "n", "d.jsonl", "h", {}, directions={"bias-scorer": False})
    assert store.sql("SELECT scorer_id, higher_is_better FROM run_scorers WHERE run_id = 'd'").rows == [
        ("bias-scorer", False)]
    monkeypatch.chdir(tmp_path)
    written = write_report(store, "d")
    assert written.path == tmp_path / "reports" / "n-d.html"
    assert "bias-scorer" in written.path.read_text()


def test_a_cli_run_on_the_lake_writes_its_report_in_the_working_directory(pg: str, tmp_path: Path) -> None:
    """`evalduck --db ducklake:... run` as a user types it: the results in the lake, the report at the run's end
    under ./reports/ and its path printed."""
    rows = [{"id": "a", "input": "hi", "output": "hello there"}, {"id": "b", "input": "bye", "output": "see you"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    url = lake_url(pg, "cli", tmp_path / "data")
    script = Path(sys.executable).with_name("evalduck")
    done = subprocess.run([str(script), "--db", url, "run", "data.jsonl", "-s", "tone-scorer", "--name", "lk"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k not in ("EVALDUCK_DB", "PREFECT_API_URL")})
    assert done.returncode == 0, done.stdout + done.stderr
    (run_id,) = Store(url).sql("SELECT run_id FROM runs WHERE name = 'lk' AND status = 'completed'").rows[0]
    report = tmp_path / "reports" / f"lk-{run_id}.html"
    assert report.is_file() and "could not write its HTML report" not in done.stderr, done.stderr
    assert f"report: {report}" in " ".join(done.stdout.split())


def test_a_first_open_that_read_the_version_before_another_migrated_the_lake_retries(
        pg: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One process reads a new lake's version (0), another then migrates the lake and commits, then the first
    goes on: it retries on the conflict and finds the lake made (its read and its migration are one
    transaction; read before it, its CREATE TABLE met the other's table, an error that is not retried)."""
    url = lake_url(pg, "late", tmp_path / "data")
    real = schema_module.current_version
    read, other_done = threading.Event(), threading.Event()

    def late_reader(con: Any, path: str) -> int:
        found = real(con, path)
        if threading.current_thread().name == "late" and not read.is_set():
            read.set()
            assert other_done.wait(120)
        return found

    monkeypatch.setattr(schema_module, "current_version", late_reader)
    errors: list[BaseException] = []

    def open_late() -> None:
        try:
            Store(url)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    late = threading.Thread(target=open_late, name="late")
    late.start()
    assert read.wait(120)
    try:
        Store(url)
    finally:
        other_done.set()
        late.join(timeout=120)
    assert not errors, errors
    versions = Store(url).sql("SELECT version, count(*) FROM schema_version GROUP BY ALL ORDER BY ALL").rows
    assert versions == [(v, 1) for v in range(1, SCHEMA_VERSION + 1)]


def test_plain_duckdb_shell_compares_runs_on_the_lake(pg: str, tmp_path: Path) -> None:
    """The views and macros live in the lake's catalog: the `duckdb` 1.5.5 shell uses them after ATTACH."""
    url = lake_url(pg, "shell", tmp_path / "data")
    store = Store(url)
    for run_id, shift in (("base", 0.0), ("cand", 0.25)):
        store.start_run(run_id, run_id, "d.jsonl", "h", {})
        store.write_batch(run_id, scores=[ScoreRow(run_id=run_id, item_id=f"i{i}", scorer_id="tone", scorer_version="1",
                                                   score=i / 10 + shift) for i in range(4)], status="completed")
    catalog = store.target.catalog
    shell = Path(sys.executable).with_name("duckdb")
    query = (f"ATTACH 'ducklake:{catalog}' AS lake; USE lake; "
             "SELECT scorer_id, n_paired, round(mean_delta, 6) FROM compare_runs('base', 'cand');")
    done = subprocess.run([str(shell), "-csv", "-noheader", "-c", query], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "tone,4,0.25"


def test_a_newer_schema_in_the_lake_is_refused(pg: str, tmp_path: Path) -> None:
    url = lake_url(pg, "refuse", tmp_path / "data")
    store = Store(url)
    store.sql("INSERT INTO schema_version (version) VALUES (99)", write=True)
    with pytest.raises(Exception, match="schema version 99"):
        Store(url)
