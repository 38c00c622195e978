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
from scorers.testing.fake_openai import FakeOpenAIServer
with FakeOpenAIServer(latency=1.0) as s:
    print(s.base_url, flush=True)
    time.sleep(1800)" >"$2/judge_url.txt" &
  JUDGE=$!
  for _ in $(seq 100); do [ -s "$2/judge_url.txt" ] && break; sleep 0.1; done
  URL="$(head -1 "$2/judge_url.txt")"
}
