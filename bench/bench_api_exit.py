"""How long a script calling ``run_evals`` takes to exit after its last line, for two checkouts alternated (A/B
in one session). Each round runs a plain script (no ``__main__`` guard, 7 rows, tone scorer, no server
configured: Prefect's temporary server, as a first script gets) in a fresh process and a scratch folder, and
measures from the script's last line to the process's end. Results go to docs/benchmarks.md by hand.

    .venv/bin/python bench/bench_api_exit.py --a /tmp/old-checkout --b . [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

_SCRIPT = """\
import sys, time
from evalduck.flows import run_evals
from evalduck import flows
rows = [{"id": f"i{n}", "input": "q", "output": "Great, thanks a lot!" if n % 2 else "This is awful."} for n in range(7)]
run_evals(rows, scorers=["tone-scorer"], db="evals.duckdb", report=False)
sys.stderr.write(f"CODE={flows.__file__}\\nLAST={time.time()}\\n")
"""


def one(checkout: str) -> tuple[float, float]:
    """(seconds from the last line to the process's end, seconds in all) for one fresh run."""
    with tempfile.TemporaryDirectory(prefix="bench-api-exit-") as folder:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(checkout), "PREFECT_HOME": os.path.join(folder, "ph"),
               "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "DO_NOT_TRACK": "1"}
        for key in ("PREFECT_API_URL", "EVALDUCK_EPHEMERAL"):
            env.pop(key, None)
        started = time.time()
        proc = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=folder, env=env, capture_output=True, text=True)
        ended = time.time()
    lines = dict(line.split("=", 1) for line in proc.stderr.splitlines() if line.startswith(("CODE=", "LAST=")))
    if proc.returncode or not lines.get("CODE", "").startswith(os.path.abspath(checkout)):
        raise SystemExit(f"{checkout}: exit {proc.returncode}, code from {lines.get('CODE')}\n{proc.stderr[-2000:]}")
    return ended - float(lines["LAST"]), ended - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", required=True, help="checkout A (e.g. the code before the change)")
    parser.add_argument("--b", required=True, help="checkout B")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    seen: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
    for _ in range(args.rounds):
        for label, checkout in (("A", args.a), ("B", args.b)):
            seen[label].append(one(checkout))
            print(f"{label}: exit {seen[label][-1][0]:.2f} s after the last line, {seen[label][-1][1]:.1f} s in all",
                  flush=True)
    for label, runs in seen.items():
        print(f"{label}: exit after the last line {', '.join(f'{e:.2f}' for e, _ in runs)} s "
              f"(mean {statistics.mean(e for e, _ in runs):.2f}); in all mean {statistics.mean(t for _, t in runs):.1f} s")


if __name__ == "__main__":
    main()
