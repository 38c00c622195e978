"""The one walk through a scorer's steps, over one state or many, with failures per state."""

from __future__ import annotations

import asyncio

from evalduck.scorers import PipelineState, ScorerInput, Step, StepContext, StepOutput, create_scorer, walk_steps


def _scorer(fail_reason: bool = False):  # type: ignore[no-untyped-def]
    def reason(ctx: StepContext) -> str:
        if fail_reason:
            raise RuntimeError("no words")
        return f"score {ctx.score}"

    return create_scorer(
        "len", analyze=lambda ctx: len(ctx.run.output) if ctx.run.output != "bad" else 1 / 0, generate_score=lambda ctx: ctx.results["analyze"] / 10,
        generate_reason=reason,
    )


async def _here(step: Step, contexts: list[StepContext]) -> list[StepOutput | BaseException]:
    outs: list[StepOutput | BaseException] = []
    for ctx in contexts:
        try:
            outs.append(await step.arun(ctx))
        except Exception as exc:  # noqa: BLE001
            outs.append(exc)
    return outs


def test_many_states_walk_together_and_a_failure_stops_only_its_state() -> None:
    scorer = _scorer()
    states = [PipelineState(scorer, ScorerInput(input="q", output=o)) for o in ("abcde", "bad", "ab")]
    asyncio.run(walk_steps(states, _here))
    assert [s.score for s in states] == [0.5, None, 0.2]
    assert states[1].failed == "len.analyze" and states[1].error is not None
    assert states[0].result().reason == "score 0.5"
    assert states[0].result() == scorer.run(input="q", output="abcde")


def test_a_failed_reason_keeps_the_score() -> None:
    (state,) = states = [PipelineState(_scorer(fail_reason=True), ScorerInput(input="q", output="abcd"))]
    asyncio.run(walk_steps(states, _here))
    assert state.scored and state.score == 0.4 and state.failed == "len.generate_reason"
    assert state.result().score == 0.4 and state.result().reason is None
