"""Time the local installation (`evalduck serve`) and one deployment run through its worker.

Phases of `evalduck.flows.local.install.serve` on a fresh PREFECT_HOME (server start to /api/health, work pool,
`prefect deploy --all`, worker start), then `--runs` runs of the `demo` deployment created through the
API as the UI's Run button does (created -> Running = worker pickup + process start + imports;
Running -> Completed = the eval itself), then `stop`. With a warm starter (this code) the runs begin once it
has finished its imports, and the script says how many flow runs it forked. Results go to docs/benchmarks.md by hand.

    .venv/bin/python bench/bench_serve.py [--runs 3] [--worker-query-seconds 1]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from evalduck.flows.local.install import ServeOptions, serve, stop

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def time_run(client: httpx.Client, deployment_id: str) -> tuple[float, float]:
    for _ in range(20):  # a busy local server answers 503 now and then (the UI test retries too)
        response = client.post(f"/deployments/{deployment_id}/create_flow_run", json={})
        if response.status_code != 503:
            break
        time.sleep(0.5)
    created = response.json()
    if "id" not in created:
        raise SystemExit(f"create_flow_run: {response.status_code} {created}")
    t0 = time.monotonic()
    running_at = None
    while True:
        run = client.get(f"/flow_runs/{created['id']}").json()
        if running_at is None and run["state_type"] in ("RUNNING", "COMPLETED"):
            running_at = time.monotonic()
        if run["state_type"] in ("COMPLETED", "FAILED", "CRASHED"):
            break
        time.sleep(0.2)
    if run["state_type"] != "COMPLETED":
        raise SystemExit(f"run {created['id']} ended {run['state_name']}")
    assert running_at is not None
    return running_at - t0, time.monotonic() - running_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--worker-query-seconds", default="1")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="evalduck-bench-serve-"))
    options = ServeOptions(
        project_dir=REPO, state_dir=root / "state", db_path=root / "evals.duckdb", cache_dir=root / "cache",
        port=free_port(),
        extra_env={"PREFECT_HOME": str(root / "prefect-home"), "PREFECT_WORKER_QUERY_SECONDS": args.worker_query_seconds},
    )
    os.environ.pop("PREFECT_API_URL", None)
    marks: list[tuple[str, float]] = []
    start = time.monotonic()

    def say(line: str) -> None:
        marks.append((line.split(" (")[0][:70], time.monotonic() - start))

    try:
        state = serve(options, say=say)
        print(f"load average before runs: {os.getloadavg()}")
        previous = 0.0
        for label, at in marks:
            print(f"{at:7.1f} s  (+{at - previous:5.1f})  {label}")
            previous = at
        warm_log = options.state_dir / "warm.log"
        if state.starter_pid is not None:  # let the warm starter finish its imports, as a user's first click would
            waited = time.monotonic()
            while "listening on" not in (warm_log.read_text() if warm_log.exists() else ""):
                if time.monotonic() - waited > 180:
                    raise SystemExit(f"the warm starter did not listen within 180 s: {warm_log}")
                time.sleep(0.2)
            print(f"warm starter ready {time.monotonic() - start:.1f} s after serve began")
        with httpx.Client(base_url=state.api_url, timeout=30) as client:
            (deployment,) = client.post("/deployments/filter", json={"deployments": {"name": {"any_": ["demo"]}}}).json()
            timings = [time_run(client, deployment["id"]) for _ in range(args.runs)]
        pickups, evals = zip(*timings, strict=True)
        print(f"demo run x{args.runs}: created->Running median {statistics.median(pickups):.1f} s "
              f"(all {', '.join(f'{p:.1f}' for p in pickups)}); Running->Completed median "
              f"{statistics.median(evals):.1f} s (all {', '.join(f'{e:.1f}' for e in evals)})")
        forked = warm_log.read_text().count("(engine)") if warm_log.exists() else 0
        print(f"flow runs forked by the warm starter: {forked} of {args.runs}")
    finally:
        t0 = time.monotonic()
        stop(options.state_dir, say=print)
        print(f"stop: {time.monotonic() - t0:.1f} s; load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
