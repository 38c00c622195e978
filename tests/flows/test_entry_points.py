"""`run_evals` with a judge scorer, run the ways users run it, each in a real subprocess: a script file
without a `__main__` guard (under the spawn, fork and forkserver start methods set by the script), `python
-c`, a script on stdin, an IPython kernel, pytest, and the CLI with a `module:function` target.

Each asserts that every judge cell is scored, that the fake judge saw the requests, and that the user's
top-level code ran exactly once (a helper process that re-imports `__main__` runs it again, and dies).
The flow run started by the Prefect process worker is in tests/e2e/test_deployments.py.

The subprocesses record their flow runs on the session's Prefect test server (PREFECT_API_URL), so none
of them pays for a temporary server of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from scorers.testing.fake_openai import FakeOpenAIServer

ROWS = [
    {"id": "q1", "input": "What is the capital of France?", "output": "Paris is the capital of France."},
    {"id": "q2", "input": "What is 2 + 2?", "output": "2 + 2 is 4."},
]
REQUESTS_PER_ROW = 3  # preprocess, analyze, generate_reason
SCORER = "answer-relevancy-scorer"

# The user's code: a side effect at the top level, then run_evals, as the README shows the Python API.
USER_CODE = """\
import json, os
with open(os.environ["COUNTER"], "a") as counter:
    counter.write("top-level code ran\\n")
from scorers import create_answer_relevancy_scorer
from flows import run_evals
judge = create_answer_relevancy_scorer(model="openai/fake-judge", api_base=os.environ["JUDGE_BASE"])
result = run_evals(data=json.loads(os.environ["ROWS"]), scorers=[judge], db=os.environ["DB"],
                   cache_dir=os.environ["CACHE"])
print("SCORES=" + json.dumps(result.scores))
"""


def _start_method(method: str) -> str:
    return f"import multiprocessing\nmultiprocessing.set_start_method({method!r})\n"


@pytest.fixture(scope="module")
def api_url(prefect_harness: None) -> str:
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    assert url, "the Prefect test harness has no API URL"
    return url


@pytest.fixture
def user_env(api_url: str, judge: FakeOpenAIServer, tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {
        **os.environ,
        "PREFECT_API_URL": api_url,
        "COUNTER": str(tmp_path / "counter.txt"),
        "JUDGE_BASE": judge.base_url,
        "ROWS": json.dumps(ROWS),
        "DB": str(tmp_path / "evals.duckdb"),
        "CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": str(tmp_path),  # a kernel's and pytest's path need not hold their working folder
    }
    yield env


def _check(proc: subprocess.CompletedProcess[str], env: dict[str, str], judge: FakeOpenAIServer) -> None:
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("SCORES=")]
    assert lines, output[-4000:]
    assert json.loads(lines[-1].removeprefix("SCORES=")) == {SCORER: 1.0}, output[-4000:]
    assert Path(env["COUNTER"]).read_text().splitlines() == ["top-level code ran"], output[-4000:]
    assert judge.request_count == REQUESTS_PER_ROW * len(ROWS)
    assert "bootstrapping phase" not in output and "the judge process exited" not in output


def _run(args: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=240)


@pytest.mark.parametrize("method", ["spawn", "fork", "forkserver"])
def test_a_script_without_a_main_guard(
    method: str, user_env: dict[str, str], judge: FakeOpenAIServer, tmp_path: Path
) -> None:
    script = tmp_path / "user_script.py"
    script.write_text(_start_method(method) + USER_CODE)
    _check(_run([sys.executable, str(script)], user_env, tmp_path), user_env, judge)


def test_python_dash_c(user_env: dict[str, str], judge: FakeOpenAIServer, tmp_path: Path) -> None:
    _check(_run([sys.executable, "-c", USER_CODE], user_env, tmp_path), user_env, judge)


def test_a_script_on_stdin(user_env: dict[str, str], judge: FakeOpenAIServer, tmp_path: Path) -> None:
    code = _start_method("spawn") + USER_CODE
    _check(_run([sys.executable, "-"], user_env, tmp_path, stdin=code), user_env, judge)


def test_pytest(user_env: dict[str, str], judge: FakeOpenAIServer, tmp_path: Path) -> None:
    test_file = tmp_path / "test_user_eval.py"
    test_file.write_text("def test_eval():\n" + textwrap.indent(USER_CODE, "    "))
    proc = _run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(test_file)],
                user_env, tmp_path)
    _check(proc, user_env, judge)


def test_an_ipython_kernel(user_env: dict[str, str], judge: FakeOpenAIServer, tmp_path: Path) -> None:
    """A Jupyter kernel: its own `__main__`, and an event loop already running in the cell's thread."""
    from jupyter_client.manager import start_new_kernel

    outputs: list[str] = []

    def collect(message: dict) -> None:  # type: ignore[type-arg]
        content = message["content"]
        if message["msg_type"] == "stream" and content.get("name") == "stdout":
            outputs.append(content["text"])
        elif message["msg_type"] == "error":
            outputs.append("\n".join(content["traceback"]))

    manager, client = start_new_kernel(kernel_name="python3", env=user_env, cwd=str(tmp_path),
                                       startup_timeout=120)
    try:
        reply = client.execute_interactive(USER_CODE, timeout=240, output_hook=collect)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    proc = subprocess.CompletedProcess(["kernel"], 0 if reply["content"]["status"] == "ok" else 1,
                                       "".join(outputs), "")
    _check(proc, user_env, judge)


def test_the_cli_with_a_module_target(user_env: dict[str, str], judge: FakeOpenAIServer, tmp_path: Path) -> None:
    """The user's code is the target module: imported once, by the CLI's process, never by the child."""
    (tmp_path / "user_target.py").write_text(
        "import os\n"
        "with open(os.environ['COUNTER'], 'a') as counter:\n"
        "    counter.write('top-level code ran\\n')\n"
        "ANSWERS = {'What is the capital of France?': 'Paris is the capital of France.'}\n"
        "def answer(question):\n"
        "    return ANSWERS.get(question, '2 + 2 is 4.')\n"
    )
    dataset = tmp_path / "data.jsonl"
    dataset.write_text("".join(json.dumps({"id": r["id"], "input": r["input"]}) + "\n" for r in ROWS))
    cli = Path(sys.executable).with_name("evalduck")
    env = {k: v for k, v in user_env.items() if k != "PYTHONPATH"}  # user_target.py is found in the cwd
    proc = _run([str(cli), "--db", user_env["DB"], "run", str(dataset), "-s", SCORER, "--target",
                 "user_target:answer", "--judge-model", "openai/fake-judge", "--judge-api-base", judge.base_url,
                 "--cache-dir", user_env["CACHE"]], env, tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    # The CLI prints a table; the scores themselves are read back from the results file.
    import duckdb

    with duckdb.connect(user_env["DB"], read_only=True) as con:
        rows = con.execute("SELECT status, score FROM scores WHERE scorer_id = ?", [SCORER]).fetchall()
    assert rows == [("scored", 1.0)] * len(ROWS), proc.stdout + proc.stderr
    assert Path(user_env["COUNTER"]).read_text().splitlines() == ["top-level code ran"]
    assert judge.request_count == REQUESTS_PER_ROW * len(ROWS)
