#!/usr/bin/env bash
# Idle footprint A/B in one window: a fresh folder per checkout (BASE, default /work/main; NEW, this one),
# one demo run each (starting the folder's server, warm starter, renderer and, in NEW, the idle watcher),
# WAIT s of quiet (default 70: no run's TIME_WAIT left), then bench/bench_idle.py on both at once for SECONDS
# (default 60); then `evalduck stop` in both.
#   BASE=/path/to/old bash bench/bench_idle_ab.sh
set -euo pipefail
BASE="${BASE:-/work/main}" NEW="${NEW:-$(cd "$(dirname "$0")/.." && pwd)}"
export PREFECT_SERVER_ANALYTICS_ENABLED=false LITELLM_LOCAL_MODEL_COST_MAP=True DO_NOT_TRACK=1
unset CI EVALDUCK_EPHEMERAL PREFECT_API_URL
work=/tmp/idle-ab; rm -rf "$work"
for tree in "$BASE" "$NEW"; do
  d="$work/$(basename "$tree")"; mkdir -p "$d"; cp "$NEW/datasets/demo.jsonl" "$d/"
  (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" run demo.jsonl --name demo >/dev/null 2>&1)
done
sleep "${WAIT:-70}"
for tree in "$BASE" "$NEW"; do
  ("$NEW/.venv/bin/python" "$NEW/bench/bench_idle.py" "$work/$(basename "$tree")" --seconds "${SECONDS_:-60}" \
    > "$work/$(basename "$tree").md") &
done
wait
for tree in "$BASE" "$NEW"; do echo "$(basename "$tree"):"; cat "$work/$(basename "$tree").md"; done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for tree in "$BASE" "$NEW"; do (cd "$work/$(basename "$tree")" && PREFECT_HOME="$PWD/ph" "$tree/.venv/bin/evalduck" stop >/dev/null); done
