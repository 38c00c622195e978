"""Judge requests through the child process: the same answers, usage and error classes as in the flow's
process (`evalduck.scorers.LiteLLMTransport`), the parent's environment as of each request, and a child that
dies mid-request turns into a transient error and is replaced."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flow_helpers import judge_scorer, rows
from warm_impostor import NOBODY, impostor

from evalduck.flows import run_evals
from evalduck.flows.judge.process import JudgeProcess, JudgeProcessError, leased_judge_process
from evalduck.scorers import (
    JudgeConfigError,
    JudgeErrorKind,
    JudgeSettings,
    JudgeTransientError,
    JudgeTransport,
    LiteLLMTransport,
)
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, Reply

MESSAGES = [{"role": "user", "content": "Say something."}]


@pytest.fixture(scope="module")
def child() -> Iterator[JudgeProcess]:
    process = JudgeProcess().start()
    yield process
    process.stop()


def _ask(process: JudgeProcess | None, server: FakeOpenAIServer, **settings: Any) -> Any:
    args = (JudgeSettings(model="openai/fake-judge", api_base=server.base_url, timeout=5, **settings), MESSAGES,
            None, "test.step", False)
    transport: JudgeTransport = process if process is not None else LiteLLMTransport()
    return asyncio.run(transport.request(*args))


def test_answer_and_usage_are_those_of_an_in_process_request(child: JudgeProcess, judge: FakeOpenAIServer) -> None:
    assert isinstance(child, JudgeTransport)
    judge.script(Reply.text("from the child"), Reply.text("from the child"))
    via_child, usage_child = _ask(child, judge)
    here, usage_here = _ask(None, judge)
    assert via_child == here == "from the child"
    drop = {"latency_s"}
    assert usage_child.model_dump(exclude=drop) == usage_here.model_dump(exclude=drop)
    assert usage_child.prompt_tokens and usage_child.completion_tokens
    assert judge.request_count == 2


def test_errors_keep_their_class_and_retry_after(child: JudgeProcess, judge: FakeOpenAIServer) -> None:
    judge.script(Reply.rate_limit(retry_after=2.0))
    with pytest.raises(JudgeTransientError, match="rate limited") as info:
        _ask(child, judge)
    assert info.value.retry_after == 2.0
    assert (info.value.kind, info.value.status) == (JudgeErrorKind.RATE_LIMITED, 429)
    judge.script(Reply.http_error(401, "Incorrect API key provided", "invalid_api_key"))
    with pytest.raises(JudgeConfigError, match="not retried") as auth:
        _ask(child, judge)
    assert (auth.value.kind, auth.value.status) == (JudgeErrorKind.AUTH, 401)
    assert judge.request_count == 2


def test_the_child_sees_the_environment_as_of_each_request(
    child: JudgeProcess, judge: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ask(child, judge)  # the child has a key
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(JudgeConfigError, match="no API key"):
        _ask(child, judge)
    assert judge.request_count == 1  # nothing sent without a key, as in the flow's process


def test_a_child_that_dies_mid_request_is_a_transient_error_and_is_replaced(
    child: JudgeProcess, judge: FakeOpenAIServer
) -> None:
    """The module's child (already started: a child's start is a litellm import) is killed; its replacement is
    the module's from then on, and is stopped with it."""
    process = child
    judge.script(Reply.hang(10.0))

    async def killed_mid_request() -> None:
        request = asyncio.ensure_future(process.request(
            JudgeSettings(model="openai/fake-judge", api_base=judge.base_url, timeout=20), MESSAGES, None,
            "test.step", False))
        deadline = time.monotonic() + 60
        while judge.request_count == 0 and time.monotonic() < deadline:  # until the child has sent it
            await asyncio.sleep(0.05)
        assert process._proc is not None and process._proc.pid is not None
        os.kill(process._proc.pid, 9)
        await request

    with pytest.raises(JudgeProcessError, match="exited"):
        asyncio.run(killed_mid_request())
    answer, _ = _ask(process, judge)  # a new child answers
    assert answer and process.alive


@pytest.mark.usefixtures("prefect_harness")
def test_a_run_scores_the_same_with_and_without_the_child(
    judge: FakeOpenAIServer, workdir: dict[str, str], tmp_path: Any
) -> None:
    data = rows(3)
    via_child = run_evals(data, scorers=[judge_scorer(judge)], **workdir)
    requests_via_child = judge.request_count
    here = run_evals(data, scorers=[judge_scorer(judge)], db=workdir["db"], cache_dir=str(tmp_path / "c2"),
                     judge_process=False)
    assert via_child.scores == here.scores and via_child.scores["answer-relevancy-scorer"] == 1.0
    assert requests_via_child == judge.request_count - requests_via_child == 9
    with leased_judge_process() as kept:  # the run's child was kept for the next run of this process
        assert kept.alive


@pytest.mark.usefixtures("prefect_harness")
def test_the_run_hands_its_transport_to_every_judge_step_and_the_model_target(
    judge: FakeOpenAIServer, workdir: dict[str, str], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flow picks the child (default) or litellm here, and the engine sends every request through it."""
    import dataclasses

    import evalduck.flows.eval_flow
    from evalduck.flows.engine import EngineServices, Executed, RunPlan, execute

    chosen: list[JudgeTransport] = []
    labels: list[str] = []

    class Recording:
        def __init__(self, inner: JudgeTransport) -> None:
            self.inner = inner

        async def request(self, *args: Any) -> Any:
            labels.append(args[3])
            return await self.inner.request(*args)

    async def recording_execute(plan: RunPlan, services: EngineServices) -> Executed:
        chosen.append(services.transport)
        return await execute(plan, dataclasses.replace(services, transport=Recording(services.transport)))

    monkeypatch.setattr(evalduck.flows.eval_flow, "execute", recording_execute)
    items = [{k: v for k, v in r.items() if k != "output"} for r in rows(2)]
    model = "model:openai/fake-target"
    run_evals(items, scorers=[judge_scorer(judge)], target=model, target_api_base=judge.base_url, **workdir)
    run_evals(rows(1, "h"), scorers=[judge_scorer(judge)], db=workdir["db"], cache_dir=str(tmp_path / "c2"),
              judge_process=False)
    assert [type(t) for t in chosen] == [JudgeProcess, LiteLLMTransport]
    assert sorted(set(labels)) == [
        "answer-relevancy-scorer.analyze", "answer-relevancy-scorer.generate_reason",
        "answer-relevancy-scorer.preprocess", f"target {model}",
    ]
    assert len(labels) == judge.request_count == 2 + 2 * 3 + 3


def test_litellm_defaults_are_those_of_a_fresh_import() -> None:
    """The settings a child starts from: if litellm changes a default, this says which."""
    import json
    import subprocess
    import sys

    from evalduck.flows.judge.process import LITELLM_DEFAULTS

    code = ("import json, litellm; names = json.loads(input()); "
            "print(json.dumps({n: getattr(litellm, n, '<absent>') for n in names}, default=repr))")
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(list(LITELLM_DEFAULTS)),
                          capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(proc.stdout.splitlines()[-1]) == LITELLM_DEFAULTS


@pytest.mark.usefixtures("prefect_harness")
def test_litellm_settings_made_in_python_reach_the_requests(
    judge: FakeOpenAIServer, workdir: dict[str, str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A callback set in Python would be lost in the child: the run keeps its requests here and says so."""
    import litellm
    from litellm.integrations.custom_logger import CustomLogger

    from evalduck.flows.judge.process import litellm_settings_made_in_python

    seen: list[str] = []

    class Recorder(CustomLogger):  # type: ignore[misc]
        async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
            seen.append(kwargs.get("model", "?"))

    assert litellm_settings_made_in_python() == []
    monkeypatch.setattr(litellm, "callbacks", [Recorder()])
    assert litellm_settings_made_in_python() == ["callbacks"]
    with caplog.at_level("WARNING"):
        result = run_evals(rows(2), scorers=[judge_scorer(judge)], **workdir)
    assert result.scores["answer-relevancy-scorer"] == 1.0
    deadline = time.monotonic() + 10  # litellm calls success callbacks after the answer, on its own time
    while len(seen) < judge.request_count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(seen) == judge.request_count == 6
    warnings = [r.getMessage() for r in caplog.records if "litellm settings made in Python" in r.getMessage()]
    assert len(warnings) == 1 and "(callbacks)" in warnings[0]


def test_a_prestarted_child_is_the_one_the_next_run_leases() -> None:
    from evalduck.flows.judge.process import prestart

    prestart()
    prestart()  # one is enough
    with leased_judge_process() as first:
        assert first.alive
    with leased_judge_process() as again:
        assert again is first


def test_the_child_warms_litellm_up_on_a_mock_completion_that_nothing_sees(
    judge: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge child pays litellm's first-call cost on a mock completion before it serves: no request leaves the
    process, and with a logging callback set (which would record it) there is no warm-up at all."""
    import litellm
    from litellm.integrations.custom_logger import CustomLogger

    from evalduck.flows.judge.child import _CALLBACK_LISTS, _warm_up

    for name in _CALLBACK_LISTS:  # as in a child: what earlier tests here registered is not there
        monkeypatch.setattr(litellm, name, [])
    calls: list[dict[str, Any]] = []
    real = litellm.acompletion

    async def counted(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", counted)
    monkeypatch.setenv("OPENAI_API_BASE", judge.base_url)  # where a real request would go
    asyncio.run(_warm_up())
    assert len(calls) == 1 and calls[0]["mock_response"]
    assert judge.request_count == 0

    class Logger(CustomLogger):
        def __init__(self) -> None:
            super().__init__()
            self.events: list[Any] = []

        async def async_log_success_event(self, *args: Any, **kwargs: Any) -> None:
            self.events.append(args)

    logger = Logger()
    monkeypatch.setattr(litellm, "callbacks", [logger])
    asyncio.run(_warm_up())
    assert len(calls) == 1 and logger.events == []


def test_a_warm_runs_judge_child_is_never_asked_of_another_users_socket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: FakeOpenAIServer, capfd: pytest.CaptureFixture[str]
) -> None:
    """In a run forked by the warm starter, judge children come from the starter's socket. Another user
    listening there (it would answer "started" and write pickles to the judge socket it was given) is sent
    nothing, not even the socket: the run starts its own judge child, whose answers are the real ones."""
    from evalduck.flows.judge import process as judge_process
    from evalduck.flows.local.warm import child as warm_child

    sock = tmp_path / "warm.sock"
    with impostor(sock, "judge") as seen:
        monkeypatch.setattr(warm_child, "_starter_socket", str(sock))
        monkeypatch.setattr(judge_process, "start_child", warm_child.start_judge_child)
        process = JudgeProcess().start()
        try:
            assert isinstance(process._proc, subprocess.Popen)  # started here, not taken from the socket
            judge.script(Reply.text("the real judge"))
            assert _ask(process, judge)[0] == "the real judge"
        finally:
            process.stop()
        assert seen() == [{"bytes": 0, "fds": 0}]
    assert f"is served by uid {NOBODY}, not by this user" in capfd.readouterr().err
