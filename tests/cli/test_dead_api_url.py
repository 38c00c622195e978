"""A PREFECT_API_URL that nothing answers at: one line naming the address and what to do, before the run
starts (nothing is stored), through the installed script in a real process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

CLI = str(Path(sys.executable).with_name("evalduck"))


def test_a_dead_api_url_is_one_line_and_nothing_is_run(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on once this closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/api"
    (tmp_path / "data.jsonl").write_text('{"id": "a", "input": "q?", "output": "A fine answer."}\n')
    env = {**os.environ, "PREFECT_API_URL": url}
    done = subprocess.run([CLI, "run", "data.jsonl", "-s", "tone-scorer"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and url in lines[0] and "start that server, or unset it" in lines[0], done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / "evals.duckdb").exists()
