#!/usr/bin/env bash
# Later demo runs, A/B alternated: a folder per checkout (its server and, with the warm starter, the starter
# up), then five runs each, alternating. BASE: the old checkout (default
# /work/wt-warm-base), NEW: this one, each with its .venv:
#   BASE=/path/to/old bash bench/bench_warm_ab.sh
set -euo pipefail
BASE="${BASE:-/work/wt-warm-base}" NEW="${NEW:-$(cd "$(dirname "$0")/.." && pwd)}"
export PREFECT_SERVER_ANALYTICS_ENABLED=false LITELLM_LOCAL_MODEL_COST_MAP=True DO_NOT_TRACK=1
unset CI EVALDUCK_EPHEMERAL PREFECT_API_URL
for tree in "$BASE" "$NEW"; do
  d="/tmp/warm-ab-$(basename "$tree")"; rm -rf "$d"; mkdir -p "$d"; cp "$NEW/datasets/demo.jsonl" "$d/"
  (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" run demo.jsonl --name demo >/dev/null 2>&1)
done
sleep "${WARM_WAIT:-30}"  # the warm starter's imports (and its chart renderer's runtime start)
grep -h "listening" "/tmp/warm-ab-$(basename "$NEW")/.evalduck/warm.log" || echo "no warm starter listening yet"
for i in 1 2 3 4 5; do
  for tree in "$BASE" "$NEW"; do
    d="/tmp/warm-ab-$(basename "$tree")"
    (cd "$d" && PREFECT_HOME="$d/ph" /usr/bin/time -f "$(basename "$tree") demo run $i: %e s" "$tree/.venv/bin/evalduck" run demo.jsonl --name demo >/dev/null 2>err.txt; tail -1 err.txt)
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "runs forked by the warm starter: $(grep -c '(cli)' "/tmp/warm-ab-$(basename "$NEW")/.evalduck/warm.log" || true)"
for tree in "$BASE" "$NEW"; do d="/tmp/warm-ab-$(basename "$tree")"; (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" stop >/dev/null); done
