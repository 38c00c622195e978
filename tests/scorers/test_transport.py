"""The judge seam: a transport passed to ``Scorer.arun``/``Step.arun``/``complete`` gets every judge request
and its answers are used; without one, requests go through litellm in this process (the fake server)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from evalduck import scorers
from evalduck.scorers import (
    JudgeSettings,
    JudgeTransientError,
    JudgeTransport,
    JudgeUsage,
    LiteLLMTransport,
    StepContext,
    complete,
    create_answer_relevancy_scorer,
)
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, default_responder

QUESTION = "How do I reset my password?"
OUTPUT = "Open Settings. The sky is blue."


@dataclass
class Recorder:
    """A transport that answers like the fake server's default responder, without any HTTP or litellm."""

    verdict: str = "yes"
    answers: list[Any] = field(default_factory=list)  # scripted answers first (text, or an exception)
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def request(
        self, settings: JudgeSettings, messages: list[dict[str, str]], response_format: Any, label: str, repair: bool
    ) -> tuple[str | None, JudgeUsage]:
        self.calls.append({"settings": settings, "messages": messages, "response_format": response_format,
                           "label": label, "repair": repair})
        if self.answers:
            answer = self.answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
        else:
            answer = default_responder({"messages": messages, "response_format": response_format},
                                       lambda _statement: self.verdict)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return text, JudgeUsage(model=settings.model, prompt_tokens=1, completion_tokens=2, latency_s=0.0,
                                repair=repair)


@pytest.fixture
def no_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default transport fails the test if anything reaches it."""

    async def refuse(self: LiteLLMTransport, *args: Any) -> Any:
        raise AssertionError(f"a request reached litellm: {args[3]}")

    monkeypatch.setattr(LiteLLMTransport, "request", refuse)


def test_the_seam_is_public() -> None:
    for name in ("JudgeTransport", "LiteLLMTransport", "complete"):
        assert name in scorers.__all__ and getattr(scorers, name) is getattr(scorers.judge, name)
    assert isinstance(LiteLLMTransport(), JudgeTransport) and isinstance(Recorder(), JudgeTransport)


@pytest.mark.usefixtures("no_litellm")
def test_a_custom_transport_gets_every_judge_request_and_its_answers_are_used(
    server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    transport = Recorder(verdict="no")
    scorer = create_answer_relevancy_scorer(**judge)
    result = asyncio.run(scorer.arun(input=QUESTION, output=OUTPUT, transport=transport))
    assert [c["label"] for c in transport.calls] == [
        "answer-relevancy-scorer.preprocess", "answer-relevancy-scorer.analyze", "answer-relevancy-scorer.generate_reason"
    ]
    assert all(c["settings"] == scorer.judge and not c["repair"] for c in transport.calls)
    assert result.preprocess_step_result == {"statements": ["Open Settings.", "The sky is blue."]}
    assert result.score == 0.0 and result.reason and "0.0" in result.reason
    assert [u.completion_tokens for u in result.usage] == [2, 2, 2]
    assert server.request_count == 0


@pytest.mark.usefixtures("no_litellm")
def test_the_repair_request_and_retries_go_through_the_same_transport(
    judge: dict[str, Any], sleeps: list[float]
) -> None:
    transport = Recorder(answers=[JudgeTransientError("busy", retry_after=2.0), "not json"])
    result = create_answer_relevancy_scorer(**judge).run(input=QUESTION, output=OUTPUT, transport=transport)
    assert result.score == 1.0
    preprocess = [c for c in transport.calls if c["label"].endswith(".preprocess")]
    assert [c["repair"] for c in preprocess] == [False, False, True]  # transient error, invalid answer, repair
    assert sleeps and sleeps[0] >= 2.0  # the standalone retry honoured the transport's Retry-After
    assert [u.repair for u in result.usage] == [False, True, False, False]


@pytest.mark.usefixtures("no_litellm")
def test_step_arun_takes_the_transport(judge: dict[str, Any]) -> None:
    scorer = create_answer_relevancy_scorer(**judge)
    transport = Recorder()
    ctx = scorer.context_for("preprocess", {"input": QUESTION, "output": OUTPUT})
    out = asyncio.run(scorer.step("preprocess").arun(ctx, transport=transport))
    assert out.result == {"statements": ["Open Settings.", "The sky is blue."]}
    assert out.prompt == transport.calls[0]["messages"][-1]["content"]
    code_step = scorer.step("generate_score")  # a function step has nothing to send
    assert asyncio.run(code_step.arun(StepContext(run=ctx.run), transport=transport)).result == 0.0
    assert len(transport.calls) == 1


def test_without_a_transport_requests_go_through_litellm(server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    result = create_answer_relevancy_scorer(**judge).run(input=QUESTION, output=OUTPUT)
    assert result.score == 1.0 and server.request_count == 3
    assert all(u.model == judge["model"] and u.prompt_tokens for u in result.usage)
    settings = JudgeSettings.model_validate(judge)
    text, usage = asyncio.run(LiteLLMTransport().request(
        settings, [{"role": "user", "content": "<output>Paris.</output>"}], None, "test.step", False))
    assert text and usage.model == judge["model"] and usage.repair is False
    assert server.request_count == 4


@pytest.mark.usefixtures("no_litellm")
def test_complete_with_a_transport(judge: dict[str, Any]) -> None:
    transport = Recorder(answers=["Paris."])
    settings = JudgeSettings.model_validate(judge)
    messages = [{"role": "user", "content": "Capital of France?"}]
    text, usage = asyncio.run(complete(settings, messages, label="target model:x", transport=transport))
    assert (text, usage.completion_tokens) == ("Paris.", 2)
    (call,) = transport.calls
    assert call == {"settings": settings, "messages": messages, "response_format": None, "label": "target model:x",
                    "repair": False}
