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
folder() { echo "$WORK/$(basename "$1")"; }
cleanup() {
  for tree in "$BASE" "$NEW"; do d="$(folder "$tree")"; (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" stop >/dev/null 2>&1) || true; done
  kill "$JUDGE" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s "$WORK/judge_url.txt" ] && break; sleep 0.1; done
URL="$(head -1 "$WORK/judge_url.txt")"
ARGS=(run judge200.jsonl -s answer-relevancy-scorer --judge-model openai/fake-judge --judge-api-base "$URL" --concurrency 16 --no-cache --name j)
for tree in "$BASE" "$NEW"; do
  d="$(folder "$tree")"; mkdir -p "$d"; cp "$WORK/judge200.jsonl" "$d/"
  (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" "${ARGS[@]}" >/dev/null 2>&1)
done
sleep "${WARM_WAIT:-20}"  # the warm starters' imports
for i in $(seq "$PAIRS"); do
  for tree in "$BASE" "$NEW"; do
    d="$(folder "$tree")"
    t0=$(date +%s.%N)
    (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" "${ARGS[@]}" >/dev/null 2>err.txt)
    t1=$(date +%s.%N)
    echo "$(basename "$tree") run $i: $("$PY" -c "print(f'{$t1 - $t0:.2f}')") s (floor 39 s), load $(cut -d' ' -f1 /proc/loadavg)"
    "$PY" "$NEW/bench/judge_phases.py" phases "$WORK/judge.log" "$t0" "$t1"
  done
done
