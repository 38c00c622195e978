#!/usr/bin/env bash
# bench_judge_ab.sh with each run's phases (bench/judge_phases.py): later judge-bound runs from the terminal,
# BASE and NEW alternated, each run split into start -> first request, the span, last answer -> exit, and the
# gaps inside the span. The logging judge adds a little to every request, so compare within one session.
#   BASE=/path/to/old [PAIRS=3] bash bench/bench_judge_phases.sh
set -euo pipefail
BASE="${BASE:-/work/wt-base}" NEW="${NEW:-$(cd "$(dirname "$0")/.." && pwd)}" PAIRS="${PAIRS:-3}"
export PREFECT_SERVER_ANALYTICS_ENABLED=false LITELLM_LOCAL_MODEL_COST_MAP=True DO_NOT_TRACK=1 OPENAI_API_KEY=sk-fake-bench
unset CI EVALDUCK_EPHEMERAL PREFECT_API_URL
WORK="$(mktemp -d -t evalduck-bench-phases-XXXX)"
PY="$NEW/.venv/bin/python"
# shellcheck source=bench/judge_workload.sh
source "$NEW/bench/judge_workload.sh"
write_judge200 "$PY" "$WORK/judge200.jsonl"
(cd "$NEW" && exec "$PY" bench/judge_phases.py serve "$WORK/judge.log" >"$WORK/judge_url.txt") &
JUDGE=$!
trap ab_cleanup EXIT
for _ in $(seq 100); do [ -s "$WORK/judge_url.txt" ] && break; sleep 0.1; done
URL="$(head -1 "$WORK/judge_url.txt")"
ab_warm_up
for i in $(seq "$PAIRS"); do
  for tree in "$BASE" "$NEW"; do
    d="$(ab_folder "$tree")"
    t0=$(date +%s.%N)
    (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" "${ARGS[@]}" >/dev/null 2>err.txt)
    t1=$(date +%s.%N)
    echo "$(basename "$tree") run $i: $("$PY" -c "print(f'{$t1 - $t0:.2f}')") s (floor 39 s), load $(cut -d' ' -f1 /proc/loadavg)"
    "$PY" "$NEW/bench/judge_phases.py" phases "$WORK/judge.log" "$t0" "$t1"
  done
done
