"""`run_evals` with a judge scorer, run the ways users run it, each in a real subprocess: a script file
without a `__main__` guard (under the spawn, fork and forkserver start methods set by the script), `python
-c`, a script on stdin, an IPython kernel, pytest, and the CLI with a `module:function` target.

Each asserts that every judge cell is scored, that its own fake judge saw the requests, and that the
user's top-level code ran exactly once (a helper process that re-imports `__main__` runs it again, and
dies). The flow run started by the Prefect process worker is in tests/e2e/test_deployments.py.

The forms run four at a time (each is mostly imports; one at a time they took ~2.5 minutes here), and
record their flow runs on the session's Prefect test server (PREFECT_API_URL), so none
pays for a temporary server of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

ROWS = [
    {"id": "q1", "input": "What is the capital of France?", "output": "Paris is the capital of France."},
    {"id": "q2", "input": "What is 2 + 2?", "output": "2 + 2 is 4."},
]
REQUESTS_PER_ROW = 3  # preprocess, analyze, generate_reason
SCORER = "answer-relevancy-scorer"
TIMEOUT_S = 400

# The user's code: a side effect at the top level, then run_evals, as the README shows the Python API.
USER_CODE = """\
import json, os
with open(os.environ["COUNTER"], "a") as counter:
    counter.write("top-level code ran\\n")
from evalduck.scorers import create_answer_relevancy_scorer
from evalduck.flows import run_evals
judge = create_answer_relevancy_scorer(model="openai/fake-judge", api_base=os.environ["JUDGE_BASE"])
result = run_evals(data=json.loads(os.environ["ROWS"]), scorers=[judge], db=os.environ["DB"],
                   cache_dir=os.environ["CACHE"])
print("SCORES=" + json.dumps(result.scores))
"""

# The CLI form's user code is its target module: imported once, by the CLI's process, never by the child.
USER_TARGET = """\
import os
with open(os.environ["COUNTER"], "a") as counter:
    counter.write("top-level code ran\\n")
ANSWERS = {"What is the capital of France?": "Paris is the capital of France."}
def answer(question):
    return ANSWERS.get(question, "2 + 2 is 4.")
"""


def _start_method(method: str) -> str:
    return f"import multiprocessing\nmultiprocessing.set_start_method({method!r})\n"


@dataclass
class Outcome:
    returncode: int
    output: str
    counter: list[str]
    requests: int
    scores: dict[str, float | None] | None


Launch = Callable[[Path, dict[str, str]], tuple[int, str]]


def _process(args: Callable[[Path, dict[str, str]], list[str]], stdin: str | None = None,
             cwd_only: bool = False) -> Launch:
    def launch(folder: Path, env: dict[str, str]) -> tuple[int, str]:
        command = args(folder, env)
        if cwd_only:  # found through the working folder alone, as a user's module would be
            env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        proc = subprocess.run(command, env=env, cwd=folder, input=stdin, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
        return proc.returncode, proc.stdout + "\n" + proc.stderr

    return launch


def _script(method: str) -> Launch:
    def args(folder: Path, env: dict[str, str]) -> list[str]:
        script = folder / "user_script.py"
        script.write_text(_start_method(method) + USER_CODE)
        return [sys.executable, str(script)]

    return _process(args)


def _pytest(folder: Path, env: dict[str, str]) -> list[str]:
    test_file = folder / "test_user_eval.py"
    test_file.write_text("def test_eval():\n" + textwrap.indent(USER_CODE, "    "))
    return [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(test_file)]


def _cli(folder: Path, env: dict[str, str]) -> list[str]:
    (folder / "user_target.py").write_text(USER_TARGET)
    (folder / "data.jsonl").write_text("".join(json.dumps({"id": r["id"], "input": r["input"]}) + "\n" for r in ROWS))
    return [str(Path(sys.executable).with_name("evalduck")), "--db", "evals.duckdb", "run", "data.jsonl", "-s", SCORER,
            "--target", "user_target:answer", "--judge-model", "openai/fake-judge", "--judge-api-base",
            env["JUDGE_BASE"], "--cache-dir", "cache"]


def _kernel(folder: Path, env: dict[str, str]) -> tuple[int, str]:
    """A Jupyter kernel: its own `__main__`, and an event loop already running in the cell's thread."""
    from jupyter_client.manager import start_new_kernel

    outputs: list[str] = []

    def collect(message: dict) -> None:  # type: ignore[type-arg]
        content = message["content"]
        if message["msg_type"] == "stream":
            outputs.append(content["text"])
        elif message["msg_type"] == "error":
            outputs.append("\n".join(content["traceback"]))

    manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(folder), startup_timeout=120)
    try:
        reply = client.execute_interactive(USER_CODE, timeout=TIMEOUT_S, output_hook=collect)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return (0 if reply["content"]["status"] == "ok" else 1), "".join(outputs)


FORMS: dict[str, Launch] = {
    "script, spawn": _script("spawn"),
    "script, fork": _script("fork"),
    "script, forkserver": _script("forkserver"),
    "python -c": _process(lambda folder, env: [sys.executable, "-c", USER_CODE]),
    "stdin": _process(lambda folder, env: [sys.executable, "-"], stdin=_start_method("spawn") + USER_CODE),
    "pytest": _process(_pytest),
    "kernel": _kernel,
    "cli": _process(_cli, cwd_only=True),
}


def _scores(folder: Path, output: str) -> dict[str, float | None] | None:
    lines = [line for line in output.splitlines() if line.startswith("SCORES=")]
    if lines:
        return json.loads(lines[-1].removeprefix("SCORES="))
    if not (folder / "evals.duckdb").exists():  # the CLI prints a table: read the scores back
        return None
    import duckdb

    with duckdb.connect(str(folder / "evals.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT status, avg(score) FROM scores WHERE scorer_id = ? GROUP BY ALL", [SCORER]).fetchall()
    return {SCORER: rows[0][1]} if rows == [("scored", rows[0][1])] else None


@pytest.fixture(scope="module")
def outcomes(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Outcome]]:
    """Every form at once, each with its own folder and its own fake judge."""
    from prefect.settings import get_current_settings

    api_url = get_current_settings().api.url
    assert api_url, "the Prefect test harness has no API URL"
    results: dict[str, Outcome] = {}
    with contextlib.ExitStack() as stack:
        judges = {form: stack.enter_context(FakeOpenAIServer()) for form in FORMS}

        def one(form: str) -> None:
            folder = tmp_path_factory.mktemp(form.replace(" ", "").replace(",", "-"))
            env = {
                **os.environ, "PREFECT_API_URL": api_url, "OPENAI_API_KEY": "sk-fake-key-for-tests",
                "COUNTER": str(folder / "counter.txt"), "JUDGE_BASE": judges[form].base_url,
                "ROWS": json.dumps(ROWS), "DB": str(folder / "evals.duckdb"), "CACHE": str(folder / "cache"),
                # A kernel's and pytest's path need not hold their working folder.
                "PYTHONPATH": str(folder),
            }
            try:
                code, output = FORMS[form](folder, env)
            except Exception as exc:  # noqa: BLE001 - reported by the form's test
                code, output = -1, f"{type(exc).__name__}: {exc}"
            counter = folder / "counter.txt"
            results[form] = Outcome(code, output, counter.read_text().splitlines() if counter.exists() else [],
                                    judges[form].request_count, _scores(folder, output))

        with ThreadPoolExecutor(max_workers=4) as pool:  # 4 at a time: 2 cores, and each has a judge child
            list(pool.map(one, FORMS))
    yield results


@pytest.mark.parametrize("form", list(FORMS))
def test_run_evals_with_a_judge_scorer_from(form: str, outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[form]
    tail = outcome.output[-4000:]
    assert outcome.returncode == 0, tail
    assert outcome.scores == {SCORER: 1.0}, tail
    assert outcome.counter == ["top-level code ran"], tail
    assert outcome.requests == REQUESTS_PER_ROW * len(ROWS), tail
    assert "bootstrapping phase" not in outcome.output and "the judge process exited" not in outcome.output, tail
