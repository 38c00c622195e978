"""The shared store (a DuckLake on a real PostgreSQL, Parquet files in a temp folder) under concurrent writers.

Run by `make test-shared` (.venv-shared: duckdb 1.5.5 with its extensions); skipped by `make test`.
One PostgreSQL for the module; each test its own database.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_harness import postgres_server

from flows.store import ScoreRow, Store
from flows.store import store as store_module

pytestmark = pytest.mark.shared
WORKER = Path(__file__).with_name("proc_worker.py")
N_ITEMS = 24  # x 2 scorers (proc_worker.SCORERS)


@pytest.fixture(scope="module")
def pg() -> Iterator[str]:
    with postgres_server(databases=("race", "overlap", "shell", "refuse")) as url:
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


def test_two_overlapping_writes_of_one_new_cell_leave_one_row(pg: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The interleaving that duplicates a cell without the write token, made certain: two transactions each
    upsert the same new cell and wait for each other before either commits (DuckLake lets two inserts commit
    together; the token makes the second commit conflict, and its retry replaces the first one's row)."""
    store = Store(lake_url(pg, "overlap", tmp_path / "data"))
    store.start_run("r", "r", "d.jsonl", "h", {})
    both_upserted = threading.Barrier(2, timeout=60)
    real_upsert = store_module.upsert
    waited: list[str] = []

    def upsert_then_wait(con: object, table: str, *args: object) -> None:
        real_upsert(con, table, *args)  # type: ignore[arg-type]
        if table == "scores" and len(waited) < 2:  # first attempts only; a retry goes straight on
            waited.append(table)
            both_upserted.wait()

    monkeypatch.setattr(store_module, "upsert", upsert_then_wait)
    errors: list[BaseException] = []

    def write(score: float) -> None:
        try:
            store.write_batch("r", scores=[ScoreRow(run_id="r", item_id="i", scorer_id="tone", scorer_version="1",
                                                    score=score)])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(score,)) for score in (0.25, 0.75)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert len(waited) == 2, "the two writes did not overlap"
    rows = store.sql("SELECT score FROM scores WHERE run_id = 'r'").rows
    assert len(rows) == 1 and rows[0][0] in (0.25, 0.75), rows


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
