"""The judge call path: error classification, standalone retries, and API keys kept out of everything."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from scorers import (
    InvalidJudgeAnswer,
    JudgeConfigError,
    JudgeSettings,
    JudgeTransientError,
    complete,
    create_answer_relevancy_scorer,
)
from scorers._judge import ask_judge
from scorers.testing.fake_openai import CANARY_KEY as FAKE_KEY, FakeOpenAIServer, Reply

RUN = {"input": "Where is my parcel?", "output": "It ships tomorrow."}


def settings(server: FakeOpenAIServer, **overrides: Any) -> JudgeSettings:
    return JudgeSettings.resolve("openai/fake-judge", api_base=server.base_url, extra={"api_key": FAKE_KEY}, **overrides)


def ask(server: FakeOpenAIServer, **overrides: Any) -> Any:
    return asyncio.run(ask_judge(settings(server, **overrides), label="s.generate_reason", system="sys", prompt="why?"))


class TestClassification:
    def test_rate_limit_is_transient_with_retry_after(self, server: FakeOpenAIServer) -> None:
        server.script(Reply.rate_limit(retry_after=7))
        with pytest.raises(JudgeTransientError) as info:
            ask(server)
        assert info.value.retry_after == 7.0 and "429" in str(info.value)

    def test_retry_after_is_capped(self, server: FakeOpenAIServer) -> None:
        server.script(Reply.rate_limit(retry_after=3600))
        with pytest.raises(JudgeTransientError) as info:
            ask(server)
        assert info.value.retry_after == 60.0

    def test_server_error_is_transient(self, server: FakeOpenAIServer) -> None:
        server.script(Reply.server_error(503))
        with pytest.raises(JudgeTransientError):
            ask(server)

    def test_timeout_is_transient(self, server: FakeOpenAIServer) -> None:
        server.script(Reply.hang(30))
        with pytest.raises(JudgeTransientError, match="timed out"):
            ask(server, timeout=0.3)

    @pytest.mark.parametrize("status", [400, 401, 404])
    def test_auth_and_bad_requests_are_config_errors(self, server: FakeOpenAIServer, status: int) -> None:
        server.script(Reply.http_error(status, "nope"))
        with pytest.raises(JudgeConfigError, match=f"status {status}"):
            ask(server)
        assert server.request_count == 1  # neither litellm nor the SDK retried on their own

    def test_missing_api_key_is_a_config_error_sent_nowhere(
        self, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        keyless = JudgeSettings.resolve("openai/fake-judge", api_base=server.base_url)
        with pytest.raises(JudgeConfigError, match="no API key.*OPENAI_API_KEY"):
            asyncio.run(ask_judge(keyless, label="s.x", system="s", prompt="p"))
        assert server.request_count == 0

    def test_connection_refused_is_transient(self) -> None:
        with FakeOpenAIServer() as gone:
            base = gone.base_url
        stale = JudgeSettings.resolve("openai/fake-judge", api_base=base, extra={"api_key": FAKE_KEY})
        with pytest.raises(JudgeTransientError):
            asyncio.run(ask_judge(stale, label="s.x", system="s", prompt="p"))

    def test_free_text_answer(self, server: FakeOpenAIServer) -> None:
        server.script("  Because.  ")
        answer, usage = ask(server)
        assert answer == "Because." and len(usage) == 1


class TestStandaloneRetries:
    def test_429_then_success_honours_retry_after(self, server: FakeOpenAIServer, judge: dict[str, Any], sleeps: list[float]) -> None:
        server.script(Reply.rate_limit(retry_after=2))
        result = create_answer_relevancy_scorer(**judge).run(RUN)
        assert result.score == 1.0
        assert server.request_count == 4 and len(sleeps) == 1 and sleeps[0] >= 2

    def test_500_and_timeout_are_retried(self, server: FakeOpenAIServer, judge: dict[str, Any], sleeps: list[float]) -> None:
        server.script(Reply.server_error(), Reply.hang(30))
        result = create_answer_relevancy_scorer(**{**judge, "timeout": 0.5}).run(RUN)
        assert result.score == 1.0 and server.request_count == 5 and len(sleeps) == 2

    def test_backoff_grows(self, server: FakeOpenAIServer, judge: dict[str, Any], sleeps: list[float]) -> None:
        server.script(*[Reply.server_error()] * 4)
        with pytest.raises(JudgeTransientError):
            create_answer_relevancy_scorer(**judge, retries=3).run(RUN)
        assert server.request_count == 4 and len(sleeps) == 3
        assert sleeps[0] <= 1.0 and sleeps[2] >= 2.0  # base 1 s * 2**n, jittered to 50-100 %

    def test_auth_error_is_not_retried(self, server: FakeOpenAIServer, judge: dict[str, Any], sleeps: list[float]) -> None:
        server.script(Reply.http_error(401, "Incorrect API key provided"))
        with pytest.raises(JudgeConfigError):
            create_answer_relevancy_scorer(**judge).run(RUN)
        assert server.request_count == 1 and sleeps == []


def test_api_key_never_shows(server: FakeOpenAIServer, judge: dict[str, Any], sleeps: list[float], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    caplog.set_level(logging.DEBUG)
    scorer = create_answer_relevancy_scorer(**judge)
    # The server echoes the key back, as real providers do in auth errors.
    server.script(Reply.http_error(401, f"Incorrect API key provided: {FAKE_KEY}"))
    with pytest.raises(JudgeConfigError) as auth:
        scorer.run(RUN)
    server.script({"statements": ["It ships."]}, Reply.wrong_verdict_count(), Reply.text(f"bad {FAKE_KEY}"))
    with pytest.raises(InvalidJudgeAnswer) as invalid:
        create_answer_relevancy_scorer(**judge, retries=0).run(RUN)
    result = scorer.run(RUN)
    texts = [
        str(auth.value),
        repr(auth.value),
        str(invalid.value),
        json.dumps(result.model_dump(mode="json")),
        json.dumps(scorer.options),
        repr(scorer.judge),
        repr(scorer),
        caplog.text,
        *capsys.readouterr(),
    ]
    assert "refused the request" in texts[0]
    for text in texts:
        assert FAKE_KEY not in text


def test_complete_is_one_plain_request(server: FakeOpenAIServer) -> None:
    server.script("Hello from the target.")
    text, usage = asyncio.run(complete(settings(server), [{"role": "user", "content": "hi"}], label="target demo"))
    assert text == "Hello from the target." and usage.model == "openai/fake-judge"
    assert server.requests[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert "response_format" not in server.requests[0]


def test_cost_is_recorded_when_litellm_knows_the_price(server: FakeOpenAIServer) -> None:
    known = JudgeSettings.resolve("openai/gpt-4o-mini", api_base=server.base_url, extra={"api_key": FAKE_KEY})
    server.script("Because.")
    _, usage = asyncio.run(ask_judge(known, label="s.generate_reason", system="sys", prompt="why?"))
    assert usage[0].cost is not None and usage[0].cost > 0
    assert server.requests[0]["model"] == "gpt-4o-mini"  # the provider prefix is litellm's, not the server's
