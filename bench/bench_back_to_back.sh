#!/usr/bin/env bash
# Two demo runs back to back (no pause) in a fresh folder, A/B alternated: BASE (default /work/main, the
# checkout before this change) and NEW (this one), each with its .venv; ROUNDS rounds (default 2). Each
# folder gets a fresh PREFECT_HOME seeded from one migrated database (so that no round pays Prefect's
# migrations), its first run starts the folder's server and warm starter, the second follows at once; the
# wall time of the second is what is printed, with whether the starter forked it. Then `evalduck stop`.
#   BASE=/path/to/old ROUNDS=3 bash bench/bench_back_to_back.sh
set -euo pipefail
BASE="${BASE:-/work/main}" NEW="${NEW:-$(cd "$(dirname "$0")/.." && pwd)}" ROUNDS="${ROUNDS:-2}"
export PREFECT_SERVER_ANALYTICS_ENABLED=false LITELLM_LOCAL_MODEL_COST_MAP=True DO_NOT_TRACK=1
unset CI EVALDUCK_EPHEMERAL PREFECT_API_URL
work=/tmp/b2b-bench; rm -rf "$work"; mkdir -p "$work"
seed="$work/seed"; mkdir -p "$seed"; cp "$NEW/datasets/demo.jsonl" "$seed/"
(cd "$seed" && PREFECT_HOME="$seed/ph" "$NEW/.venv/bin/evalduck" run demo.jsonl --ephemeral >/dev/null 2>&1)
for i in $(seq "$ROUNDS"); do
  for tree in "$BASE" "$NEW"; do
    name=$(basename "$tree"); d="$work/$name-$i"; mkdir -p "$d"; cp "$NEW/datasets/demo.jsonl" "$d/"
    cp -r "$seed/ph" "$d/ph"
    (
      cd "$d"; export PREFECT_HOME="$d/ph"
      s=$(date +%s.%N)
      "$tree/.venv/bin/evalduck" run demo.jsonl --name demo >/dev/null 2>first.err
      m=$(date +%s.%N)
      "$tree/.venv/bin/evalduck" run demo.jsonl --name demo >/dev/null 2>second.err
      e=$(date +%s.%N)
      forked=$(grep -c "forked a run child" .evalduck/warm.log || true)
      printf '%s round %d: first %.1f s, second %.1f s (runs forked by the starter: %s)\n' \
        "$name" "$i" "$(echo "$m - $s" | bc)" "$(echo "$e - $m" | bc)" "$forked"
      "$tree/.venv/bin/evalduck" stop >/dev/null
    )
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
