"""The fake OpenAI-compatible server: protocol, scripting, faults, concurrency, command line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from evalduck.scorers.testing.fake_openai import FakeOpenAIServer, Reply, default_responder, request_step


def post(base_url: str, body: dict[str, Any], timeout: float = 10) -> tuple[int, dict[str, Any], dict[str, str]]:
    req = urllib.request.Request(
        f"{base_url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), dict(err.headers)


def chat(prompt: str, schema_props: list[str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "fake-judge", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": prompt}]}
    if schema_props:
        schema = {"type": "object", "properties": {p: {} for p in schema_props}}
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "X", "schema": schema}}
    return body


def content(reply: dict[str, Any]) -> str:
    return reply["choices"][0]["message"]["content"]


def test_openai_response_shape(server: FakeOpenAIServer) -> None:
    status, reply, _ = post(server.base_url, chat("<output>\nHi there. Bye\n</output>", ["statements"]))
    assert status == 200 and reply["object"] == "chat.completion" and reply["model"] == "fake-judge"
    assert json.loads(content(reply)) == {"statements": ["Hi there.", "Bye"]}
    assert reply["usage"]["total_tokens"] == reply["usage"]["prompt_tokens"] + reply["usage"]["completion_tokens"]
    assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")


def test_default_responder_by_step() -> None:
    analyze = chat('<statements>\n["a", "b [off]"]\n</statements>', ["results"])
    verdict = default_responder(analyze, lambda s: "no" if "[off]" in s else "yes")
    assert [r["result"] for r in verdict["results"]] == ["yes", "no"]
    assert "0.5" in default_responder(chat("<score>\n0.5\n</score>"))
    assert [request_step(chat("x", p)) for p in (["statements"], ["results"], None)] == ["preprocess", "analyze", "generate_reason"]


def test_script_queue_then_responder(server: FakeOpenAIServer) -> None:
    server.script({"statements": ["scripted"]}, "plain text")
    assert json.loads(content(post(server.base_url, chat("x", ["statements"]))[1])) == {"statements": ["scripted"]}
    assert content(post(server.base_url, chat("x"))[1]) == "plain text"
    assert server.pending_replies == 0
    assert "score" in content(post(server.base_url, chat("<score>1</score>"))[1])
    assert server.request_count == 3 and len(server.requests_for_step("preprocess")) == 1
    server.reset()
    assert server.request_count == 0


def test_faults(server: FakeOpenAIServer) -> None:
    server.script(Reply.rate_limit(retry_after=2), Reply.server_error(), Reply.http_error(401, "bad key"), Reply.malformed_json())
    status, body, headers = post(server.base_url, chat("x"))
    assert status == 429 and headers["Retry-After"] == "2" and body["error"]["code"] == "rate_limit_exceeded"
    assert post(server.base_url, chat("x"))[0] == 500
    assert post(server.base_url, chat("x"))[0] == 401
    status, body, _ = post(server.base_url, chat("x"))
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(content(body))


def test_hang_outlasts_the_client_and_stop_releases_it() -> None:
    srv = FakeOpenAIServer().start()
    srv.script(Reply.hang(60))
    with pytest.raises((TimeoutError, urllib.error.URLError, socket.timeout)):
        post(srv.base_url, chat("x"), timeout=0.3)
    srv.stop()  # must not wait for the hung handler


def test_bad_requests(server: FakeOpenAIServer) -> None:
    req = urllib.request.Request(f"{server.base_url}/chat/completions", data=b"{not json")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    assert info.value.code == 400
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(urllib.request.Request(f"{server.base_url}/embeddings", data=b"{}"), timeout=5)
    assert info.value.code == 404


def test_concurrent_requests_overlap_and_are_all_counted() -> None:
    with FakeOpenAIServer(latency=0.2) as srv, ThreadPoolExecutor(16) as pool:
        replies = list(pool.map(lambda i: post(srv.base_url, chat(f"<output>\nItem {i}.\n</output>", ["statements"])), range(32)))
        assert all(status == 200 for status, _, _ in replies)
        assert sorted(json.loads(content(r))["statements"][0] for _, r, _ in replies) == sorted(f"Item {i}." for i in range(32))
        assert srv.request_count == 32 and srv.max_in_flight > 1


def test_command_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalduck.scorers.testing.fake_openai", "--port", str(port), "--latency", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ},
    )
    try:
        assert proc.stdout is not None and f"127.0.0.1:{port}/v1" in proc.stdout.readline()
        deadline = time.monotonic() + 10
        while True:
            try:
                status, reply, _ = post(f"http://127.0.0.1:{port}/v1", chat("<output>\nA.\n</output>", ["statements"]))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert status == 200 and json.loads(content(reply)) == {"statements": ["A."]}
        claims = chat("<output>\nA. B.\n</output>", ["claims"])
        claims["response_format"]["json_schema"]["name"] = "Claims"  # a SCORERS.md step, by its schema name
        assert json.loads(content(post(f"http://127.0.0.1:{port}/v1", claims)[1])) == {"claims": ["A.", "B."]}
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=10)
    assert "RuntimeWarning" not in stderr, stderr  # the README's command prints nothing but its address
