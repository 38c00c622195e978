#!/usr/bin/env bash
# Later demo runs, A/B alternated, for the step cache record (flows/engine/cache_ledger.py) and
# --explain-cache: A = BASE's checkout (before it: no record), B = this one without the flag (the record
# kept), C = this one with --explain-cache (the record kept and the table printed). A folder per checkout
# (its server and warm starter up), then five runs of each, alternating. Results in docs/benchmarks.md.
#   BASE=/work/main bash bench/bench_explain_ab.sh
set -euo pipefail
BASE="${BASE:-/work/main}" NEW="${NEW:-$(cd "$(dirname "$0")/.." && pwd)}"
export PREFECT_SERVER_ANALYTICS_ENABLED=false LITELLM_LOCAL_MODEL_COST_MAP=True DO_NOT_TRACK=1
unset CI EVALDUCK_EPHEMERAL PREFECT_API_URL EVALDUCK_JUDGE_MODEL
root="${ROOT:-/tmp/explain-ab}"
folder() { echo "$root/$1"; }
for arm in A B; do
  tree=$([ $arm = A ] && echo "$BASE" || echo "$NEW"); d=$(folder $arm)
  rm -rf "$d"; mkdir -p "$d"; cp "$NEW/datasets/demo.jsonl" "$d/"
  (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" run demo.jsonl --name demo >/dev/null 2>&1)
done
sleep "${WARM_WAIT:-30}"  # the warm starters' imports
for i in 1 2 3 4 5; do
  for arm in A B C; do
    tree=$([ $arm = A ] && echo "$BASE" || echo "$NEW"); d=$(folder $([ $arm = C ] && echo B || echo $arm))
    flag=$([ $arm = C ] && echo --explain-cache || true)
    (cd "$d" && PREFECT_HOME="$d/ph" /usr/bin/time -f "$arm demo run $i: %e s" "$tree/.venv/bin/evalduck" run demo.jsonl \
      --name demo $flag >out.txt 2>err.txt; tail -1 err.txt)
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -A6 "step cache" "$(folder B)/out.txt" || true
for arm in A B; do
  tree=$([ $arm = A ] && echo "$BASE" || echo "$NEW"); d=$(folder $arm)
  (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" stop >/dev/null)
done
