"""The judge call path: error classification, standalone retries, and API keys kept out of everything."""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import socket
from typing import Any

import pytest

import evalduck.scorers.judge
from evalduck import scorers
from evalduck.scorers import (
    InvalidJudgeAnswer,
    JudgeConfigError,
    JudgeError,
    JudgeRequestError,
    JudgeSettings,
    JudgeTransientError,
    complete,
    create_answer_relevancy_scorer,
)
from evalduck.scorers import JudgeErrorKind as K
from evalduck.scorers._judge import ask_judge
from evalduck.scorers.testing.fake_openai import CANARY_KEY as FAKE_KEY
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, Reply

RUN = {"input": "Where is my parcel?", "output": "It ships tomorrow."}


def settings(server: FakeOpenAIServer, **overrides: Any) -> JudgeSettings:
    return JudgeSettings.resolve("openai/fake-judge", api_base=server.base_url, extra={"api_key": FAKE_KEY}, **overrides)


def ask(server: FakeOpenAIServer, **overrides: Any) -> Any:
    return asyncio.run(ask_judge(settings(server, **overrides), label="s.generate_reason", system="sys", prompt="why?"))


def refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def failure(server: FakeOpenAIServer | None, reply: Reply | None = None, **overrides: Any) -> JudgeError:
    """The error one request raises (the reply scripted on ``server`` first)."""
    if server is not None and reply is not None:
        server.script(reply)
    judge = settings(server, **overrides) if server is not None else JudgeSettings.resolve(
        "openai/fake-judge", extra={"api_key": FAKE_KEY}, **overrides)
    with pytest.raises(JudgeError) as info:
        asyncio.run(ask_judge(judge, label="s.analyze", system="sys", prompt="why?"))
    return info.value


class TestClassification:
    """Each fault is stored as what happened (kind, HTTP status, the provider's words) and what to do; the
    class says whether to retry, give up on this request, or stop the run (a configuration error)."""

    @pytest.mark.parametrize(("reply", "cls", "kind", "status", "says"), [
        (Reply.invalid_body(), JudgeTransientError, K.INVALID_RESPONSE, None, "HTTP body that is not a chat completion (not valid JSON"),
        (Reply.truncated_body(keep=40), JudgeTransientError, K.CONNECTION_CLOSED, None, "got 40 of the"),
        (Reply.close_connection(), JudgeTransientError, K.CONNECTION_CLOSED, None, "lost the connection"),
        (Reply.server_error(503), JudgeTransientError, K.SERVER_ERROR, 503, "failed with HTTP 503: The server had an error"),
        (Reply.http_error(401, "Incorrect API key provided"), JudgeConfigError, K.AUTH, 401,
         "rejected the credentials (HTTP 401): Incorrect API key provided; not retried: check the API key"),
        (Reply.http_error(403, "Project lacks access"), JudgeConfigError, K.FORBIDDEN, 403, "denied access (HTTP 403): Project lacks access"),
        (Reply.http_error(404, "The model `gpt-nope` does not exist"), JudgeConfigError, K.MODEL_NOT_FOUND, 404,
         "no such model or endpoint (HTTP 404): The model `gpt-nope` does not exist; not retried: check the model name"),
        (Reply(status=404, raw_body=b"404 page not found"), JudgeConfigError, K.MODEL_NOT_FOUND, 404, "(HTTP 404): 404 page not found"),
        (Reply.http_error(400, "maximum context length is 8192 tokens"), JudgeRequestError, K.BAD_REQUEST, 400,
         "refused the request (HTTP 400); not retried: maximum context length is 8192 tokens"),
        (Reply.http_error(422, "bad schema"), JudgeRequestError, K.BAD_REQUEST, 422, "(HTTP 422)"),
    ])
    def test_answers_from_the_server(
        self, server: FakeOpenAIServer, reply: Reply, cls: type[JudgeError], kind: K, status: int | None, says: str
    ) -> None:
        error = failure(server, reply)
        assert type(error) is cls and (error.kind, error.status) == (kind, status), str(error)
        assert str(error).startswith("s.analyze: judge 'openai/fake-judge' ") and says in str(error)
        assert "status 500" not in str(error) and "litellm." not in str(error)
        assert server.request_count == 1  # neither litellm nor the SDK retried on their own

    def test_rate_limit_is_transient_with_retry_after(self, server: FakeOpenAIServer) -> None:
        error = failure(server, Reply.rate_limit(retry_after=7))
        assert isinstance(error, JudgeTransientError) and error.retry_after == 7.0
        assert (error.kind, error.status) == (K.RATE_LIMITED, 429) and "rate limited (HTTP 429): Rate limit reached" in str(error)

    def test_retry_after_is_capped(self, server: FakeOpenAIServer) -> None:
        error = failure(server, Reply.rate_limit(retry_after=3600))
        assert isinstance(error, JudgeTransientError) and error.retry_after == 60.0

    def test_timeout_is_transient(self, server: FakeOpenAIServer) -> None:
        error = failure(server, Reply.hang(30), timeout=0.3)
        assert isinstance(error, JudgeTransientError) and error.kind is K.TIMEOUT
        assert f"timed out after 0.3s (no answer from {server.base_url})" in str(error)

    def test_refused_connection_is_a_configuration_error(self) -> None:
        base = f"http://127.0.0.1:{refused_port()}/v1"
        error = failure(None, api_base=base)
        assert type(error) is JudgeConfigError and (error.kind, error.status) == (K.CONNECTION_REFUSED, None)
        assert f"could not connect to {base}: connection refused" in str(error)
        assert "not retried: start the judge server, or fix the api_base" in str(error)

    def test_without_its_cause_chain_a_connection_error_is_not_called_http_500(self) -> None:
        """Run inside an ``except`` block, litellm's exception chains to that block's exception instead of
        the connection error; the OpenAI SDK's "Connection error." still says no HTTP answer came."""
        base = f"http://127.0.0.1:{refused_port()}/v1"
        try:
            raise RuntimeError("an unrelated exception being handled")
        except RuntimeError:
            error = failure(None, api_base=base)
        assert isinstance(error, JudgeTransientError) and error.status is None, str(error)
        assert "failed with no HTTP answer" in str(error) and "HTTP 500" not in str(error)

    @pytest.mark.parametrize(("api_base", "says"), [
        ("127.0.0.1:8000/v1", "it has no http:// or https://"),
        ("htp://127.0.0.1:8000/v1", "the scheme is 'htp'"),
        ("http:///v1", "it has no host"),
        ("http://127.0.0.1:99999/v1", "Port out of range"),
        (f"http://user:{FAKE_KEY}@127.0.0.1:9/v1", "http://user:***@127.0.0.1:9/v1' (it holds credentials"),
    ])
    def test_a_bad_url_is_a_configuration_error_that_keeps_keys_out(self, api_base: str, says: str) -> None:
        error = failure(None, api_base=api_base)
        assert type(error) is JudgeConfigError and error.kind is K.BAD_URL, str(error)
        assert says in str(error) and "not retried: give an http(s) URL with a host" in str(error)
        assert FAKE_KEY not in str(error)

    def test_a_host_that_does_not_resolve_is_a_configuration_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The resolver is made to fail for one name, as it does for a typo'd host (no DNS query leaves)."""
        resolve = socket.getaddrinfo

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host == "judge.invalid":
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return resolve(host, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        error = failure(None, api_base="http://judge.invalid/v1")
        assert type(error) is JudgeConfigError and error.kind is K.DNS
        assert "could not resolve the host 'judge.invalid'" in str(error) and "check the host name" in str(error)

    def test_an_unknown_provider_is_a_configuration_error_sent_nowhere(self, server: FakeOpenAIServer) -> None:
        error = failure(None, model="notaprovider/foo", api_base=server.base_url)
        assert type(error) is JudgeConfigError and (error.kind, error.status) == (K.UNKNOWN_PROVIDER, None)
        assert "nothing was sent" in str(error) and server.request_count == 0

    def test_missing_api_key_is_a_config_error_sent_nowhere(
        self, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        keyless = JudgeSettings.resolve("openai/fake-judge", api_base=server.base_url)
        with pytest.raises(JudgeConfigError, match="no API key.*OPENAI_API_KEY") as info:
            asyncio.run(ask_judge(keyless, label="s.x", system="s", prompt="p"))
        assert info.value.kind is K.NO_API_KEY and server.request_count == 0

    def test_errors_cross_a_process_boundary_whole(self, server: FakeOpenAIServer) -> None:
        for error in (failure(server, Reply.rate_limit(retry_after=3)), failure(server, Reply.http_error(404, "no"))):
            copy = pickle.loads(pickle.dumps(error))
            assert (type(copy), str(copy), copy.kind, copy.status) == (type(error), str(error), error.kind, error.status)
            assert getattr(copy, "retry_after", None) == getattr(error, "retry_after", None)

    def test_errors_pickle_whole_where_tblib_pickles_exceptions(self, server: FakeOpenAIServer) -> None:
        """Dask's distributed installs tblib's pickling for every exception class defined when it is imported,
        which also pickles an exception's __context__; litellm's exceptions cannot be unpickled, so ours must
        not carry one."""
        import tblib.pickling_support

        for error in (failure(server, Reply.rate_limit(retry_after=3)), failure(server, Reply.http_error(404, "no"))):
            tblib.pickling_support.install(error)
            assert error.__context__ is None
            copy = pickle.loads(pickle.dumps(error))
            assert (type(copy), str(copy), copy.kind, copy.status) == (type(error), str(error), error.kind, error.status)

    def test_the_public_seam_exports_the_error_classes(self) -> None:
        for name in ("JudgeError", "JudgeErrorKind", "JudgeConfigError", "JudgeTransientError", "JudgeRequestError",
                     "InvalidJudgeAnswer"):
            assert getattr(evalduck.scorers.judge, name) is getattr(scorers, name) and name in evalduck.scorers.judge.__all__
        assert not issubclass(JudgeRequestError, (JudgeConfigError, JudgeTransientError))
        assert InvalidJudgeAnswer("x").kind is K.INVALID_ANSWER and JudgeTransientError("x").kind is K.UNKNOWN

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

    def test_broken_bodies_and_connections_are_retried(
        self, server: FakeOpenAIServer, judge: dict[str, Any], sleeps: list[float]
    ) -> None:
        server.script(Reply.invalid_body(), Reply.truncated_body(), Reply.close_connection())
        result = create_answer_relevancy_scorer(**judge).run(RUN)
        assert result.score == 1.0 and server.request_count == 3 + 3 and len(sleeps) == 3

    def test_a_refused_connection_is_not_retried(self, judge: dict[str, Any], sleeps: list[float]) -> None:
        scorer = create_answer_relevancy_scorer(**{**judge, "api_base": f"http://127.0.0.1:{refused_port()}/v1"})
        with pytest.raises(JudgeConfigError, match="connection refused"):
            scorer.run(RUN)
        assert sleeps == []

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
    assert "rejected the credentials (HTTP 401): Incorrect API key provided: ***" in texts[0]
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
