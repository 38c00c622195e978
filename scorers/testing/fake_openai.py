"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

litellm reaches it through its ordinary OpenAI provider path (model ``openai/<name>``,
``api_base=server.base_url``, any ``api_key``). Answers come from a queue of scripted replies, else from
a responder (by default one that answers every prebuilt judge step by reading the prompt), so flow
tests and benchmarks over hundreds of items need no scripting. Runs on a threading HTTP server so that
many concurrent requests with latency overlap.

Usage::

    with FakeOpenAIServer(latency=0.0) as server:
        server.script(Reply.rate_limit(retry_after=1), {"statements": ["Paris."]})
        ...  # litellm.acompletion(model="openai/fake-judge", api_base=server.base_url, api_key="sk-fake")
        assert server.request_count == 2

Command line: ``python -m evalduck.scorers.testing.fake_openai --port 8765 --latency 1.0``.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import itertools
import json
import random
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evalduck.scorers._messages import split_sentences
from evalduck.scorers.testing import fake_answers

__all__ = (
    "CANARY_KEY",
    "FAULTS",
    "FakeOpenAIServer",
    "FaultyOpenAIServer",
    "NoisyOpenAIServer",
    "Reply",
    "default_responder",
    "request_step",
    "tiktoken_usage",
    "split_sentences",
)

# A recognisable fake API key: tests send it and then check it never shows in a result, log or error.
CANARY_KEY = "sk-evalduck-canary-0123456789abcdef"

Request = dict[str, Any]
VerdictFn = Callable[[str], str]
UsageFn = Callable[[Request, str], tuple[int, int]]  # (request, answer text) -> (prompt, completion) tokens



@dataclass(frozen=True)
class Reply:
    """One scripted answer: a body for a 200 reply, or a fault.

    ``content`` is the assistant message text (a dict or list is sent as its JSON text).
    """

    content: Any = None
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    raw_body: bytes | None = None
    hang_s: float = 0.0
    transform: Callable[[Request, "FakeOpenAIServer"], "Reply"] | None = None
    cut_body_at: int | None = None  # send this many bytes of the body (Content-Length says all), then close
    close_without_reply: bool = False

    @classmethod
    def text(cls, content: Any) -> "Reply":
        """A normal answer whose message content is ``content`` (JSON-encoded unless a string)."""
        return cls(content=content)

    @classmethod
    def rate_limit(cls, retry_after: float | None = 1.0) -> "Reply":
        """HTTP 429, with a Retry-After header (seconds) unless None."""
        headers = () if retry_after is None else (("Retry-After", _num(retry_after)),)
        return cls(status=429, headers=headers, raw_body=_error_body("Rate limit reached", "rate_limit_exceeded"))

    @classmethod
    def server_error(cls, status: int = 500) -> "Reply":
        """A 5xx answer."""
        return cls(status=status, raw_body=_error_body("The server had an error", "server_error"))

    @classmethod
    def http_error(cls, status: int, message: str = "error", code: str = "error") -> "Reply":
        """Any HTTP error, e.g. 401 (authentication) or 404 (unknown model)."""
        return cls(status=status, raw_body=_error_body(message, code))

    @classmethod
    def hang(cls, seconds: float = 30.0) -> "Reply":
        """Hold the request open (past the client's timeout), then answer normally."""
        return cls(hang_s=seconds, transform=lambda req, srv: srv.respond(req))

    @classmethod
    def invalid_body(cls, body: bytes = b'{"id": "x", "choices": [ {"message": ') -> "Reply":
        """A 200 whose HTTP body is not a chat completion (by default JSON cut short, with a Content-Length
        that matches it), as a proxy that truncates answers sends."""
        return cls(raw_body=body)

    @classmethod
    def truncated_body(cls, keep: int = 40) -> "Reply":
        """The responder's 200 answer, its connection closed after ``keep`` bytes of the body (its
        Content-Length announced all of it)."""
        return cls(transform=lambda req, srv: replace(Reply.text(srv.responder(req)), cut_body_at=keep))

    @classmethod
    def close_connection(cls) -> "Reply":
        """Close the connection without answering (a server that crashed mid-request)."""
        return cls(close_without_reply=True)

    @classmethod
    def malformed_json(cls) -> "Reply":
        """A 200 whose message content is not JSON."""
        return cls(content='{"statements": ["unterminated"')

    @classmethod
    def wrong_verdict_count(cls, delta: int = 1) -> "Reply":
        """Answer an analyze request with ``delta`` more verdicts than there are statements."""

        def _wrong(req: Request, srv: "FakeOpenAIServer") -> "Reply":
            statements = _statements_in(_first_user_prompt(req))
            n = max(0, len(statements) + delta)
            return cls(content={"results": [{"result": "yes", "reason": "Addresses the question."}] * n})

        return cls(transform=_wrong)

    @classmethod
    def from_callable(cls, fn: Callable[[Request], Any]) -> "Reply":
        """Compute the content from the parsed request body."""
        return cls(transform=lambda req, srv: cls(content=fn(req)))


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _error_body(message: str, code: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": code, "param": None, "code": code}}).encode()


def _user_prompt(req: Request) -> str:
    for message in reversed(req.get("messages", [])):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


def _first_user_prompt(req: Request) -> str:
    for message in req.get("messages", []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


def _tagged(prompt: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", prompt, re.DOTALL)
    return match.group(1) if match else None


def _statements_in(prompt: str) -> list[str]:
    block = _tagged(prompt, "statements")
    if block is None:
        return []
    try:
        value = json.loads(block)
    except ValueError:
        return []
    return [str(s) for s in value] if isinstance(value, list) else []


def _schema_name(req: Request) -> str | None:
    fmt = req.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name")


def request_step(req: Request) -> str:
    """Which judge step a request is: ``preprocess``/``analyze`` by schema, ``generate_reason`` otherwise."""
    fmt = req.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or {}
    props = schema.get("properties") or {}
    if "statements" in props or _schema_name(req) in fake_answers.PREPROCESS_SCHEMAS:
        return "preprocess"
    if "results" in props or _schema_name(req) in fake_answers.ANSWERS:
        return "analyze"
    return "generate_reason"


def default_responder(req: Request, verdict_for: VerdictFn | None = None) -> Any:
    """Answer every prebuilt judge step sensibly by reading the (first) user prompt.

    The SCORERS.md steps are answered by ``fake_answers`` (by the request's schema name; their reasons
    by the prompt's ``<metric>``). Answer relevancy: preprocess gives the sentences of the ``<output>``
    block; analyze one verdict per statement of the ``<statements>`` block (``verdict_for(statement)``,
    default "yes"); anything else a sentence quoting the ``<score>`` block.
    """
    prompt = _first_user_prompt(req)
    answer = fake_answers.ANSWERS.get(_schema_name(req) or "")
    if answer is not None:
        return answer(prompt)
    step = request_step(req)
    if step == "preprocess":
        return {"statements": split_sentences(_tagged(prompt, "output") or "")}
    if step == "analyze":
        verdict = verdict_for or (lambda _s: "yes")
        results = []
        for statement in _statements_in(prompt):
            v = verdict(statement)
            results.append({"result": v, "reason": f"Verdict {v}: judged against the question."})
        return {"results": results}
    reason = fake_answers.reason(prompt)
    if reason is not None:
        return reason
    score = (_tagged(prompt, "score") or "").strip() or "unknown"
    return f"The score is {score} because of how directly the statements address the question."


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hung handler never blocks stop()
    request_queue_size = 256  # bursts of concurrent connects must not wait on SYN retries


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    queue: collections.deque[Reply] = field(default_factory=collections.deque)
    requests: list[Request] = field(default_factory=list)
    ids: itertools.count[int] = field(default_factory=itertools.count)
    in_flight: int = 0
    max_in_flight: int = 0


class FakeOpenAIServer:
    """OpenAI-compatible ``POST /v1/chat/completions`` on 127.0.0.1 (ephemeral port by default).

    Args:
        latency: seconds each request waits before its answer.
        responder: ``fn(request_body) -> content`` for unscripted requests (default: ``default_responder``).
        verdict_for: with the default responder, the verdict per statement (default "yes").
        port: 0 for an ephemeral port.
        usage: the usage each answer reports, ``fn(request, answer text) -> (prompt, completion tokens)``
            (``tiktoken_usage()``: counted as a provider counts them); default: characters / 4.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        responder: Callable[[Request], Any] | None = None,
        verdict_for: VerdictFn | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        usage: UsageFn | None = None,
    ) -> None:
        self.latency = latency
        self.usage = usage
        self.responder = responder or (lambda req: default_responder(req, verdict_for))
        self._state = _State()
        self._closing = threading.Event()
        self._httpd = _Server((host, port), _handler_for(self))
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``api_base`` to give litellm: ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeOpenAIServer":
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()  # wakes hung and sleeping handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting and inspection ----------------------------------------------------------------------
    def script(self, *replies: Reply | Any) -> None:
        """Queue answers for the next requests, in order (a non-Reply value is ``Reply.text(value)``)."""
        with self._state.lock:
            self._state.queue.extend(r if isinstance(r, Reply) else Reply.text(r) for r in replies)

    @property
    def pending_replies(self) -> int:
        with self._state.lock:
            return len(self._state.queue)

    @property
    def request_count(self) -> int:
        with self._state.lock:
            return len(self._state.requests)

    @property
    def requests(self) -> list[Request]:
        """Parsed bodies of every request received, in arrival order (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def max_in_flight(self) -> int:
        """The most requests that were being answered at the same time."""
        with self._state.lock:
            return self._state.max_in_flight

    def requests_for_step(self, step: str) -> list[Request]:
        return [r for r in self.requests if request_step(r) == step]

    def reset(self) -> None:
        """Forget received requests and scripted replies."""
        with self._state.lock:
            self._state.queue.clear()
            self._state.requests.clear()

    # -- answering -------------------------------------------------------------------------------------
    def respond(self, req: Request) -> Reply:
        """The unscripted answer to a request."""
        return Reply.text(self.responder(req))

    def _next_reply(self, req: Request) -> tuple[Reply, int]:
        with self._state.lock:
            self._state.requests.append(req)
            self._state.in_flight += 1
            self._state.max_in_flight = max(self._state.max_in_flight, self._state.in_flight)
            reply = self._state.queue.popleft() if self._state.queue else None
            n = next(self._state.ids)
        return (reply if reply is not None else self.respond(req)), n

    def _done(self) -> None:
        with self._state.lock:
            self._state.in_flight -= 1

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._closing.wait(seconds)


# The faults FaultyOpenAIServer mixes in: none needs the client to wait (no hangs, Retry-After 0).
FAULTS: dict[str, Callable[[], Reply]] = {
    "rate_limit": lambda: Reply.rate_limit(retry_after=0),
    "server_error": lambda: Reply.server_error(500),
    "unavailable": lambda: Reply.server_error(503),
    "invalid_body": Reply.invalid_body,
    "truncated_body": Reply.truncated_body,
    "closed_connection": Reply.close_connection,
    "bad_content": Reply.malformed_json,
}


class FaultyOpenAIServer(FakeOpenAIServer):
    """The fake judge answering a share of requests with a fault drawn from ``FAULTS``.

    Whether a request is faulted, and how, depends only on the seed, its messages and how many times they
    were sent before, never on arrival order, so a concurrent run sees the same faults every time. The
    same messages are faulted at most ``max_in_a_row`` times, so a client with that many retries always
    ends with an answer. ``injected`` counts the faults served by name.
    """

    def __init__(
        self, *, rate: float = 0.3, seed: int = 0, max_in_a_row: int = 2, faults: Iterable[str] = tuple(FAULTS),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.rate, self.seed, self.max_in_a_row, self.faults = rate, seed, max_in_a_row, tuple(faults)
        self.injected: collections.Counter[str] = collections.Counter()
        self._sent: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def respond(self, req: Request) -> Reply:
        key = hashlib.sha256(json.dumps(req.get("messages"), sort_keys=True).encode()).hexdigest()
        with self._lock:
            attempt = self._sent[key]
            self._sent[key] += 1
        draw = random.Random(f"{self.seed}:{key}:{attempt}").random()
        if attempt >= self.max_in_a_row or draw >= self.rate:
            return super().respond(req)
        name = self.faults[int(draw / self.rate * len(self.faults))]
        with self._lock:
            self.injected[name] += 1
        return FAULTS[name]()


_FLIPPED = {"yes": "no", "no": "yes"}


class NoisyOpenAIServer(FakeOpenAIServer):
    """The fake judge that disagrees with itself: each yes/no verdict of an answer (a ``result`` or ``verdict``
    value, anywhere in it) is flipped with probability ``flip_rate``.

    Whether a verdict flips depends only on ``seed``, the request's messages, its generation ``seed`` and the
    verdict's place in the answer, never on arrival order: the same request is answered the same way every
    time (a cache hit and a fresh request agree), and repeated judging's samples (which differ by their
    generation seed) each draw their own flips. ``flipped``/``verdicts`` count what was served.
    """

    def __init__(self, *, flip_rate: float = 0.2, seed: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not 0.0 <= flip_rate <= 1.0:
            raise ValueError(f"flip_rate must be in [0, 1], got {flip_rate}")
        self.flip_rate, self.seed = flip_rate, seed
        self.flipped = self.verdicts = 0
        self._lock = threading.Lock()

    def respond(self, req: Request) -> Reply:
        key = hashlib.sha256(json.dumps(req.get("messages"), sort_keys=True).encode()).hexdigest()
        draws = random.Random(f"{self.seed}:{key}:{req.get('seed')}")
        return Reply.text(self._flip(self.responder(req), draws))

    def _flip(self, value: Any, draws: random.Random) -> Any:
        if isinstance(value, list):
            return [self._flip(v, draws) for v in value]
        if not isinstance(value, dict):
            return value
        out = {}
        for k, v in value.items():
            if k in ("result", "verdict") and isinstance(v, str) and v.lower() in _FLIPPED:
                flip = draws.random() < self.flip_rate
                with self._lock:
                    self.verdicts += 1
                    self.flipped += flip
                out[k] = _FLIPPED[v.lower()] if flip else v
            else:
                out[k] = self._flip(v, draws)
        return out


def tiktoken_usage(encoding: str = "o200k_base") -> UsageFn:
    """Usage counted as OpenAI's chat API counts it (its cookbook's rule): each message's role and content tokens
    plus 3, 3 for the answer's priming, and a ``json_schema`` response format's schema as JSON text; the answer's
    tokens as completion. ``encoding``: tiktoken's, read from litellm's bundled copies (no download)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.submodule_search_locations:
        bundled = os.path.join(list(spec.submodule_search_locations)[0], "litellm_core_utils", "tokenizers")
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", bundled)
    import tiktoken

    enc = tiktoken.get_encoding(encoding)

    def count(req: Request, text: str) -> tuple[int, int]:
        prompt = 3
        for message in req.get("messages", []):
            prompt += 3 + len(enc.encode(str(message.get("role", "")))) + len(enc.encode(str(message.get("content") or "")))
        schema = ((req.get("response_format") or {}).get("json_schema") or {}).get("schema")
        if schema:
            prompt += len(enc.encode(json.dumps(schema)))
        return prompt, len(enc.encode(text))

    return count


def _completion_body(req: Request, content: Any, n: int, usage: UsageFn | None = None) -> bytes:
    text = content if isinstance(content, str) else json.dumps(content)
    if usage is not None:
        prompt_tokens, completion_tokens = usage(req, text)
    else:
        prompt_chars = sum(len(str(m.get("content", ""))) for m in req.get("messages", []))
        prompt_tokens, completion_tokens = prompt_chars // 4 + 1, len(text) // 4 + 1
    body = {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": req.get("model", "fake-judge"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return json.dumps(body).encode()


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Keep-alive, as real providers do: a connection per request would charge every benchmarked request
        # a TCP connect and close the client does not pay against a provider. Handler threads are daemons
        # and stop() closes the listening socket, so an idle kept-alive connection never blocks it.
        protocol_version = "HTTP/1.1"
        # Headers and body leave in two writes: with Nagle's algorithm on, the body of a kept-alive
        # connection waits for the client's delayed ACK (~40 ms), which no real provider adds.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr noise
            return

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-judge"}]}).encode())
            else:
                self._send(404, _error_body("not found", "not_found"))

        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, _error_body(f"no route {self.path}", "not_found"))
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                req = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, _error_body("request body is not JSON", "invalid_request_error"))
                return
            reply, n = server._next_reply(req)
            try:
                server._wait(server.latency)
                while reply.transform is not None or reply.hang_s:
                    server._wait(reply.hang_s)
                    if server._closing.is_set():
                        return
                    reply = reply.transform(req, server) if reply.transform else Reply(content=reply.content)
                if reply.close_without_reply:
                    self.close_connection = True
                    return
                body = reply.raw_body if reply.raw_body is not None else _completion_body(req, reply.content, n, server.usage)
                self._send(reply.status, body, reply.headers, cut_at=reply.cut_body_at)
            finally:
                server._done()

        def _send(
            self, status: int, body: bytes, headers: Iterable[tuple[str, str]] = (), cut_at: int | None = None
        ) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for key, value in headers:
                    self.send_header(key, value)
                self.end_headers()
                if cut_at is not None:
                    self.wfile.write(body[:cut_at])
                    self.close_connection = True
                    return
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (e.g. its timeout fired during a hang)

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a fake OpenAI-compatible judge on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--flip-rate", type=float, default=0.0,
                        help="flip each yes/no verdict with this probability (seeded, the same per request)")
    parser.add_argument("--seed", type=int, default=0, help="seed of --flip-rate's draws")
    args = parser.parse_args(argv)
    server = (NoisyOpenAIServer(flip_rate=args.flip_rate, seed=args.seed, latency=args.latency, port=args.port)
              if args.flip_rate else FakeOpenAIServer(latency=args.latency, port=args.port)).start()
    print(f"fake OpenAI server at {server.base_url} (latency {args.latency}s); Ctrl-C to stop", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
