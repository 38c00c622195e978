# Issue 12's judge-bound workload, sourced by bench_cli_runs.sh and bench_judge_ab.sh: 200 items for
# answer-relevancy-scorer and a fake judge with 1 s latency in a process of its own.
#   write_judge200 PYTHON FILE      writes the dataset
#   start_fake_judge PYTHON DIR     starts the judge in the background; sets JUDGE (its pid) and URL
write_judge200() {
  "$1" -c "
import json, sys
rows = [{'id': f'a{i}', 'input': f'How do I reset the password of account {i}?',
         'output': f'Open the sign-in page of account {i} and click Forgot password. We email you a link.'} for i in range(200)]
open(sys.argv[1], 'w').write(''.join(json.dumps(r) + '\n' for r in rows))" "$2"
}

start_fake_judge() {
  "$1" -c "
import time
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer
with FakeOpenAIServer(latency=1.0) as s:
    print(s.base_url, flush=True)
    time.sleep(1800)" >"$2/judge_url.txt" &
  JUDGE=$!
  for _ in $(seq 100); do [ -s "$2/judge_url.txt" ] && break; sleep 0.1; done
  URL="$(head -1 "$2/judge_url.txt")"
}

# For the A/B scripts (bench_judge_ab.sh, bench_judge_phases.sh), with WORK, BASE, NEW, JUDGE and URL set:
#   ab_folder TREE   the folder a checkout's runs use
#   ab_cleanup       stops both folders' servers and the judge (trap it on EXIT)
#   ab_warm_up       sets ARGS, runs once in each folder (its server and warm starter start), waits for imports
ab_folder() { echo "$WORK/$(basename "$1")"; }
ab_cleanup() {
  for tree in "$BASE" "$NEW"; do d="$(ab_folder "$tree")"; (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" stop >/dev/null 2>&1) || true; done
  kill "$JUDGE" 2>/dev/null || true
}
ab_warm_up() {
  ARGS=(run judge200.jsonl -s answer-relevancy-scorer --judge-model openai/fake-judge --judge-api-base "$URL" --concurrency 16 --no-cache --name j)
  for tree in "$BASE" "$NEW"; do
    d="$(ab_folder "$tree")"; mkdir -p "$d"; cp "$WORK/judge200.jsonl" "$d/"
    (cd "$d" && PREFECT_HOME="$d/ph" "$tree/.venv/bin/evalduck" "${ARGS[@]}" >/dev/null 2>&1)
  done
  sleep "${WARM_WAIT:-20}"  # the warm starters' imports
}
