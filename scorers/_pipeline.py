"""The one walk through a scorer's steps: which earlier results each step sees, the score, the result.

``Scorer.arun`` walks one input; the flows walk one item per judge scorer (each step a Prefect task or a
micro-batch) and many items at once for code scorers (each step one task over a chunk). They differ only
in *where* a step runs, which the caller's ``run_step`` decides; the walk itself is ``walk_steps`` below.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalduck.scorers._context import ScorerInput, StepContext
from evalduck.scorers._result import ScorerResult, StepOutput
from evalduck.scorers._step import Step

if TYPE_CHECKING:
    from evalduck.scorers._scorer import Scorer

__all__ = ("PipelineState", "RunStep", "walk_steps")

# Runs one step for several walks at once: one output (or the exception that step raised) per context.
RunStep = Callable[[Step, list[StepContext]], Awaitable[Sequence["StepOutput | BaseException"]]]


@dataclass
class PipelineState:
    """One scorer on one input, part way through its steps."""

    scorer: Scorer
    run: ScorerInput
    outputs: dict[str, StepOutput] = field(default_factory=dict)
    score: float | None = None
    failed: str | None = None  # the label of the step that failed
    error: BaseException | None = None

    def context(self, step: Step) -> StepContext:
        """What ``step`` sees: earlier steps' results only, and the score only in generate_reason."""
        return self.scorer.context_for(step.name, self.run, {k: v.result for k, v in self.outputs.items()}, self.score)

    def record(self, step: Step, output: StepOutput) -> None:
        self.outputs[step.name] = output
        if step.name == "generate_score":
            self.score = float(output.result)

    def fail(self, step: Step, error: BaseException) -> None:
        self.failed, self.error = step.label, error

    @property
    def scored(self) -> bool:
        """A score exists: every step up to generate_score succeeded (generate_reason may have failed)."""
        return self.score is not None and (self.error is None or self.failed == self._label("generate_reason"))

    def result(self) -> ScorerResult:
        """The scorer's result; a failed generate_reason leaves the reason out, not the score."""
        outputs = dict(self.outputs)
        if "generate_reason" not in outputs and any(s.name == "generate_reason" for s in self.scorer.steps):
            outputs["generate_reason"] = StepOutput(result=None)
        return self.scorer.assemble(self.run, outputs)

    def _label(self, step_name: str) -> str:
        return f"{self.scorer.id}.{step_name}"


async def walk_steps(states: Sequence[PipelineState], run_step: RunStep) -> None:
    """Every state through its scorer's steps in order, one call of ``run_step`` per step for all the
    states still going; a state whose step failed stops there (``state.failed``/``state.error``).

    All states belong to one scorer. An exception raised by ``run_step`` itself propagates."""
    if not states:
        return
    for step in states[0].scorer.steps:
        live = [s for s in states if s.error is None]
        if not live:
            return
        outs = await run_step(step, [s.context(step) for s in live])
        if len(outs) != len(live):
            raise ValueError(f"{step.label}: {len(outs)} results for {len(live)} items")
        for state, out in zip(live, outs, strict=True):
            if isinstance(out, BaseException):
                state.fail(step, out)
            else:
                state.record(step, out)
