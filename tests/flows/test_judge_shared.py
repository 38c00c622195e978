"""One judge child serves the runs of its process side by side (a sweep's), each on its own event loop and thread:
every answer reaches the loop that asked, none another's; and the runs lease the same child."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from evalduck.flows.judge.process import leased_judge_process
from evalduck.scorers import JudgeSettings
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer


def test_runs_on_their_own_loops_share_one_child_and_get_their_own_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-tests")
    with FakeOpenAIServer(latency=0.3, responder=lambda req: f"echo {req['messages'][-1]['content']}") as server:
        settings = JudgeSettings(model="openai/fake-judge", api_base=server.base_url, timeout=20)
        answers: dict[str, list[str]] = {}
        leased: list[Any] = []
        started = threading.Barrier(2)

        def run(name: str) -> None:
            with leased_judge_process() as child:
                leased.append(child)
                started.wait(30)  # both runs hold the lease at once

                async def main() -> list[str]:
                    asks = [child.request(settings, [{"role": "user", "content": f"{name} {i}"}], None, "t", False)
                            for i in range(8)]
                    return [content for content, _ in await asyncio.gather(*asks)]

                answers[name] = asyncio.run(main())

        threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert leased[0] is leased[1] and leased[0].alive  # one child, kept for the next run
        assert answers == {name: [f"echo {name} {i}" for i in range(8)] for name in ("a", "b")}
        assert server.request_count == 16 and server.max_in_flight > 8  # the two loops' requests overlapped
