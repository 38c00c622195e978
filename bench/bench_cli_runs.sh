#!/usr/bin/env bash
# Terminal runs as a user makes them (docs/benchmarks-history.md, "Runs from the terminal"): `evalduck run` of the
# demo dataset four times in a fresh folder (the first starts the folder's Prefect server), twice with
# EVALDUCK_EPHEMERAL=1 (Prefect's temporary server), then a judge-bound run (200 items, fake judge with 1 s
# latency in another process, concurrency 16) three times and once ephemeral. Wall time of each process.
# A demo run starts right after the previous one; the folder's warm starter (flows/local/warm/) imports its
# preloads once the run that started it has ended, so the second demo run may still run in-process.
#   bash bench/bench_cli_runs.sh
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
E="$REPO/.venv/bin/evalduck"
PY="$REPO/.venv/bin/python"
WORK="$(mktemp -d -t evalduck-bench-cli-XXXX)"
cd "$WORK"
# shellcheck source=bench/judge_workload.sh
source "$REPO/bench/judge_workload.sh"
cp "$REPO/datasets/demo.jsonl" .
export PREFECT_HOME="$WORK/prefect-home" PREFECT_SERVER_ANALYTICS_ENABLED=false LITELLM_LOCAL_MODEL_COST_MAP=True
export DO_NOT_TRACK=1 OPENAI_API_KEY=sk-fake-bench
unset CI EVALDUCK_EPHEMERAL PREFECT_API_URL
trap '"$E" stop >/dev/null 2>&1 || true; kill "${JUDGE:-}" 2>/dev/null || true' EXIT
for i in 1 2 3 4; do /usr/bin/time -f "demo run $i: %e s" "$E" run demo.jsonl --name demo >/dev/null 2>err.txt; tail -1 err.txt; done
for i in 1 2; do EVALDUCK_EPHEMERAL=1 /usr/bin/time -f "demo, temporary server $i: %e s" "$E" run demo.jsonl --name demo >/dev/null 2>err.txt; tail -1 err.txt; done
write_judge200 "$PY" judge200.jsonl
start_fake_judge "$PY" "$WORK"
ARGS=(run judge200.jsonl -s answer-relevancy-scorer --judge-model openai/fake-judge --judge-api-base "$URL" --concurrency 16 --no-cache --name j)
for i in 1 2 3; do /usr/bin/time -f "judge-bound run $i: %e s (floor 39 s)" "$E" "${ARGS[@]}" >/dev/null 2>err.txt; tail -1 err.txt; done
EVALDUCK_EPHEMERAL=1 /usr/bin/time -f "judge-bound, temporary server: %e s" "$E" "${ARGS[@]}" >/dev/null 2>err.txt; tail -1 err.txt
echo "runs forked by the warm starter: $(grep -c '(cli)' .evalduck/warm.log 2>/dev/null || echo 0)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
