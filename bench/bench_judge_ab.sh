#!/usr/bin/env bash
# Later judge-bound runs from the terminal, A/B alternated (issue 12's second workload: 200 items, fake judge
# with 1 s latency in another process, concurrency 16, no cache; item floor 39 s). A folder per checkout, its
# server and warm starter up after a first run, then three runs each, alternating. BASE: the old checkout
# (default /work/wt-base), NEW: this one, each with its .venv:
#   BASE=/path/to/old bash bench/bench_judge_ab.sh
set -euo pipefail
BASE="${BASE:-/work/wt-base}" NEW="${NEW:-$(cd "$(dirname "$0")/.." && pwd)}"
export PREFECT_SERVER_ANALYTICS_ENABLED=false LITELLM_LOCAL_MODEL_COST_MAP=True DO_NOT_TRACK=1 OPENAI_API_KEY=sk-fake-bench
unset CI EVALDUCK_EPHEMERAL PREFECT_API_URL
WORK="$(mktemp -d -t evalduck-bench-judge-XXXX)"
# shellcheck source=bench/judge_workload.sh
source "$NEW/bench/judge_workload.sh"
write_judge200 "$NEW/.venv/bin/python" "$WORK/judge200.jsonl"
start_fake_judge "$NEW/.venv/bin/python" "$WORK"
trap ab_cleanup EXIT
ab_warm_up
for i in 1 2 3; do
  for tree in "$BASE" "$NEW"; do
    d="$(ab_folder "$tree")"
    (cd "$d" && PREFECT_HOME="$d/ph" /usr/bin/time -f "$(basename "$tree") judge-bound run $i: %e s (floor 39 s)" "$tree/.venv/bin/evalduck" "${ARGS[@]}" >/dev/null 2>err.txt; tail -1 err.txt)
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for tree in "$BASE" "$NEW"; do echo "$(basename "$tree"): runs forked by the warm starter: $(grep -c '(cli)' "$(ab_folder "$tree")/.evalduck/warm.log" || true)"; done
