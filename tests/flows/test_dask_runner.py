"""runner 'dask': the same run on a real Dask cluster (the module's LocalCluster of 2 worker processes,
``dask_cluster``), with judge requests from the workers to the fake server over loopback."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flow_helpers import judge_scorer, rows

from evalduck.flows import run_evals
from evalduck.flows.store import Store
from evalduck.scorers import ConfigError, create_scorer
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture(scope="module")
def cluster(dask_cluster_env: None, dask_cluster: Any) -> Any:
    return dask_cluster


@pytest.fixture(scope="module")
def dask_cluster_env() -> Iterator[None]:
    """The judge's key, set before the workers start: they inherit the environment then (a worker reads a
    provider's key from its own environment, never from the flow's)."""
    before = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = "sk-fake-key-for-tests"
    yield
    if before is None:
        os.environ.pop("OPENAI_API_KEY", None)
    else:
        os.environ["OPENAI_API_KEY"] = before

CELL = "SELECT item_id, scorer_id, status, score, reason, error FROM scores WHERE run_id = ? ORDER BY ALL"


def _scorers(server: FakeOpenAIServer) -> list[Any]:
    return ["tone-scorer", "textual-difference-scorer", judge_scorer(server)]


def _cells(db: str, run_id: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in Store(db).sql(CELL, [run_id]).rows]


JUDGE_STEPS = ("answer-relevancy-scorer.preprocess", "answer-relevancy-scorer.analyze",
               "answer-relevancy-scorer.generate_reason")


def _judge_steps(states: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(n, s) for n, s in states if n.split("[")[0] in JUDGE_STEPS]


def _task_run_states(flow_run_id: str, until: Callable[[list[tuple[str, str]]], bool]) -> list[tuple[str, str]]:
    """(name, state) of the flow run's task runs, once every one the server has recorded is final and they
    satisfy ``until`` (the server records them from events, which arrive after the run: counting how many had
    arrived returned before the last judge step's once), or after 30 s."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    only = FlowRunFilter(id=FlowRunFilterId(any_=[uuid.UUID(flow_run_id)]))

    async def read() -> list[tuple[str, str]]:
        async with get_client() as client:
            for _ in range(150):
                runs = await client.read_task_runs(flow_run_filter=only)
                states = [(r.name, r.state.name if r.state else "?") for r in runs]
                if all(r.state and r.state.is_final() for r in runs) and until(states):
                    return states
                await asyncio.sleep(0.2)
            return states

    return asyncio.run(read())


@pytest.fixture(scope="module")
def two_runs(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same eval run locally and on the cluster, each with its own cache (no hits across them)."""
    tmp = tmp_path_factory.mktemp("dask-two-runs")
    out: dict[str, Any] = {"db": str(tmp / "evals.duckdb"), "cache": str(tmp / "cache-dask")}
    with FakeOpenAIServer() as server:
        local = run_evals(rows(6), scorers=_scorers(server), db=out["db"], cache_dir=str(tmp / "cache-local"))
        before = server.request_count
        remote = run_evals(rows(6), scorers=_scorers(server), db=out["db"], cache_dir=out["cache"],
                           runner="dask", dask_address=cluster.scheduler_address, concurrency=4)
        out["dask_requests"] = server.request_count - before
    out.update(local=local, remote=remote)
    return out


def test_a_dask_run_equals_a_local_run_cell_for_cell(two_runs: dict[str, Any]) -> None:
    local, remote = two_runs["local"], two_runs["remote"]
    assert two_runs["dask_requests"] > 0  # the workers asked the judge themselves: no cache shared
    local_cells, remote_cells = _cells(two_runs["db"], local.run_id), _cells(two_runs["db"], remote.run_id)
    assert len(remote_cells) == 6 * 3
    assert [c[1:] for c in remote_cells] == [c[1:] for c in local_cells]
    assert {c[2] for c in remote_cells} == {"scored"}


def test_a_dask_run_records_every_task_run_in_prefect(two_runs: dict[str, Any]) -> None:
    remote = two_runs["remote"]
    states = _task_run_states(remote.flow_run_id, until=lambda states: len(_judge_steps(states)) >= 6 * 3 and any(
        n.startswith("tone-scorer.") for n, _ in states))
    assert len(_judge_steps(states)) == 6 * 3, states
    assert any(n.startswith("tone-scorer.") for n, _ in states), states
    assert {s for _, s in states} == {"Completed"}, states


def test_a_second_dask_run_hits_the_cache(two_runs: dict[str, Any], cluster: Any) -> None:
    with FakeOpenAIServer() as server:  # another port: the judge's address is not part of a cache key
        again = run_evals(rows(6), scorers=_scorers(server), db=two_runs["db"], cache_dir=two_runs["cache"], runner="dask",
            dask_address=cluster.scheduler_address)
        assert server.request_count == 0
    assert [c[1:] for c in _cells(two_runs["db"], again.run_id)] == [
        c[1:] for c in _cells(two_runs["db"], two_runs["remote"].run_id)]
    states = _task_run_states(again.flow_run_id, until=lambda states: sum(s == "Cached" for _, s in states) >= 6 * 3)
    assert sum(s == "Cached" for _, s in states) >= 6 * 3, states


def test_a_scorer_that_does_not_pickle_is_named_with_what_to_do() -> None:
    from evalduck.flows.engine.dispatch import portables
    from evalduck.flows.inputs.targets import resolve_target

    lock = threading.Lock()

    def score(ctx: Any) -> float:
        with lock:
            return 1.0

    scorer = create_scorer("my-locked-scorer", generate_score=score)
    with pytest.raises(ConfigError) as caught:
        portables([scorer], resolve_target(None))
    message = str(caught.value)
    assert "scorer 'my-locked-scorer' cannot be sent to Dask workers" in message
    assert "lock" in message and "module level" in message and "runner 'local'" in message


def test_a_prebuilt_scorer_travels_and_is_rebuilt_once_per_worker_process() -> None:
    from evalduck.flows.engine.portable import PortableScorer, portable_scorer
    from evalduck.scorers import PREBUILT

    tone = PREBUILT["tone-scorer"].factory({})
    sent = portable_scorer(tone)
    assert sent.blob is not None  # prebuilt closures pickle by value
    spec = PortableScorer("tone-scorer", "d" * 64, spec=("tone-scorer", "{}"))  # the fallback when they do not
    rebuilt = spec.scorer()
    assert [s.name for s in rebuilt.steps] == [s.name for s in tone.steps] and rebuilt.version == tone.version
    assert spec.scorer() is rebuilt


def test_a_task_run_reaches_a_worker_with_the_run_context_sent_once_and_its_settings_built_once() -> None:
    import cloudpickle
    from prefect import task
    from prefect.context import SettingsContext, serialize_context

    from evalduck.flows.engine.portable import RunContext, run_task_run

    @task(name="double")
    async def double(x: int) -> int:
        return 2 * x

    sent = RunContext(serialize_context())
    sent.settings()  # built in the flow's process: not what travels
    on_worker = cloudpickle.loads(cloudpickle.dumps(sent))
    first, second = on_worker.settings(), on_worker.settings()
    assert first is not second and first.settings is second.settings  # one context per task run, settings built once
    assert first.settings.api.url == SettingsContext.get().settings.api.url
    task_run_id = uuid.uuid4()
    state = run_task_run(double, task_run_id, {"x": 21}, {"x": set()}, {}, on_worker)
    assert state.is_completed() and state.result() == 42 and state.state_details.task_run_id == task_run_id
    assert on_worker.settings().settings is first.settings


def test_a_workers_task_runs_share_one_loop_and_one_prefect_client() -> None:
    """A new loop per task run (prefect-dask's ``asyncio.run``) meant two new Prefect clients per task run,
    each with its own TLS context: ~75% of a worker's CPU per judge request (docs/benchmarks.md)."""
    import asyncio

    from prefect import task
    from prefect.context import AsyncClientContext, SyncClientContext, serialize_context

    from evalduck.flows.engine.portable import RunContext, run_task_run

    @task(name="where")
    async def where() -> tuple[int, int, int]:
        return (id(asyncio.get_running_loop()), id(AsyncClientContext.get().client),  # type: ignore[union-attr]
                id(SyncClientContext.get().client))  # type: ignore[union-attr]

    run = RunContext(serialize_context())
    seen = {run_task_run(where, uuid.uuid4(), {}, {}, {}, run).result() for _ in range(3)}
    assert len(seen) == 1, seen
    assert AsyncClientContext.get() is None or id(AsyncClientContext.get().client) not in next(iter(seen))  # not leaked here


def test_a_worker_killed_mid_run_loses_only_its_cells_in_flight(cluster: Any, tmp_path: Path) -> None:
    from distributed import Client

    db = str(tmp_path / "evals.duckdb")
    with Client(cluster.scheduler_address) as client, FakeOpenAIServer(latency=0.5) as server:
        pids = list(client.run(os.getpid).values())
        killed: list[int] = []

        def kill_one() -> None:
            deadline = time.monotonic() + 120
            while server.request_count < 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(pids[0], signal.SIGKILL)  # mid-run: requests of that worker are in flight
            killed.append(pids[0])

        killer = threading.Thread(target=kill_one, daemon=True)
        killer.start()
        result = run_evals(rows(12), scorers=[judge_scorer(server)], db=db, cache_dir=str(tmp_path / "cache"),
                           runner="dask", dask_address=cluster.scheduler_address, concurrency=12,
                           retry_backoff_s=0)
        killer.join(5)
        client.wait_for_workers(2, timeout=120)  # the nanny restarts it, for the next tests
    assert killed
    counts = Store(db).sql("SELECT item_id, count(*) FROM scores WHERE run_id = ? GROUP BY ALL", [result.run_id]).rows
    assert sorted(i for i, _ in counts) == sorted(r["id"] for r in rows(12))
    assert {n for _, n in counts} == {1}
    statuses = {s for (s,) in Store(db).sql("SELECT status FROM scores WHERE run_id = ?", [result.run_id]).rows}
    assert statuses <= {"scored", "error"}
    assert Store(db).sql("SELECT status FROM runs WHERE run_id = ?", [result.run_id]).rows[0][0] == "completed"


@pytest.mark.timeout(600)
def test_the_cli_runs_on_a_local_cluster_of_its_own(tmp_path: Path) -> None:
    """The CLI's own LocalCluster; its flow run is recorded on the session's Prefect test server
    (PREFECT_API_URL), so the run pays for no temporary server (that is tested in tests/e2e)."""
    from prefect.settings import get_current_settings

    data = tmp_path / "data.jsonl"
    data.write_text("".join(f'{{"id": "r{i}", "input": "hi {i}", "output": "Hello there {i}!"}}\n' for i in range(3)))
    env = {**os.environ, "EVALDUCK_EPHEMERAL": "1", "OPENAI_API_KEY": "sk-fake-key-for-tests",
           "PREFECT_API_URL": str(get_current_settings().api.url)}
    with FakeOpenAIServer() as server:
        command = [str(Path(sys.executable).with_name("evalduck")), "--db", str(tmp_path / "evals.duckdb"), "run",
                   str(data), "-s", "tone-scorer", "-s", "answer-relevancy-scorer", "--judge-model", "openai/fake-judge",
                   "--judge-api-base", server.base_url, "--cache-dir", str(tmp_path / "cache"), "--runner", "dask",
                   "--workers", "1"]
        with subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) as proc:
            try:
                stdout, stderr = proc.communicate(timeout=560)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
                pytest.fail(f"the CLI run did not end in 560 s:\n{stdout[-2000:]}\n{stderr[-4000:]}")
        done = subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)
        assert done.returncode == 0, done.stderr[-3000:]
        assert server.request_count >= 3  # from the cluster's worker
    assert "(PREFECT_API_URL)" in done.stderr  # the session's server, not a temporary one of its own
    rows_ = Store(str(tmp_path / "evals.duckdb")).sql("SELECT scorer_id, status, count(*) FROM scores GROUP BY ALL").rows
    assert sorted(map(tuple, rows_)) == [("answer-relevancy-scorer", "scored", 3), ("tone-scorer", "scored", 3)]
    assert "tone-scorer" in done.stdout


def test_a_plain_script_without_a_main_guard_runs_on_a_local_cluster(tmp_path: Path) -> None:
    """The LocalCluster's workers are spawned, and spawn re-runs the caller's __main__: a script without an
    ``if __name__ == "__main__":`` guard started the run again in every worker, and its nannies failed."""
    from prefect.settings import get_current_settings

    (tmp_path / "data.jsonl").write_text("".join(f'{{"id": "r{i}", "input": "hi {i}", "output": "Hello {i}!"}}\n'
                                                 for i in range(3)))
    (tmp_path / "evaluate.py").write_text(
        "from evalduck import run_evals\n"
        "from evalduck.scorers import create_scorer\n"
        "def shout(ctx):\n    return 1.0 if ctx.run.output.endswith('!') else 0.0\n"  # the script's own: by value
        "loud = create_scorer('loud', generate_score=shout)\n"
        "r = run_evals('data.jsonl', scorers=['tone-scorer', loud], runner='dask', workers=1)\n"
        "print('RUN', r.run_id, sorted(r.scores))\n")
    env = {**os.environ, "OPENAI_API_KEY": "sk-fake-key-for-tests", "PREFECT_API_URL": str(get_current_settings().api.url)}
    done = subprocess.run([sys.executable, "evaluate.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Failed to start process" not in done.stderr and "bootstrapping phase" not in done.stderr
    assert "RUN" in done.stdout and "['loud', 'tone-scorer']" in done.stdout
    rows_ = Store(str(tmp_path / "evals.duckdb")).sql("SELECT scorer_id, status, count(*) FROM scores GROUP BY ALL").rows
    assert sorted(map(tuple, rows_)) == [("loud", "scored", 3), ("tone-scorer", "scored", 3)]
