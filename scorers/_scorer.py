"""The Scorer (frozen: id, version, steps, options), its builder, and the standalone run."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalduck.scorers._cache_key import canonical_json
from evalduck.scorers._context import STEP_ORDER, ScorerInput, StepContext
from evalduck.scorers._errors import ConfigError
from evalduck.scorers._judge import JudgeSettings, output_schema
from evalduck.scorers._pipeline import PipelineState, walk_steps
from evalduck.scorers._result import ScorerResult, StepOutput
from evalduck.scorers._retry import with_retries
from evalduck.scorers._step import JudgePrompt, Step, StepFunction
from evalduck.scorers._sync import run_sync
from evalduck.scorers._transport import JudgeTransport

__all__ = ("Scorer", "create_scorer")

_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")


@dataclass(frozen=True, kw_only=True)
class Scorer:
    """A pipeline of steps in the order preprocess, analyze, generate_score, generate_reason.

    ``run``/``arun`` take keyword arguments (input=, output=, ground_truth=, request_context=, run_id=,
    context=, expected_tool=, expected_tool_order=) or one Mastra-shaped dict ({"input", "output",
    "groundTruth", "requestContext", "runId", "context", "expectedTool", "expectedToolOrder"}).
    ``higher_is_better`` is the score's direction (False: a share of bad items, e.g. hallucination).
    """

    id: str
    version: str
    higher_is_better: bool = True
    description: str = ""
    steps: tuple[Step, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    judge: JudgeSettings | None = None
    # How many times an orchestrator judges each cell (evalduck's runs: None takes the run's judge_samples);
    # ``run``/``arun`` judge once.
    samples: int | None = None

    def with_source(self) -> Scorer:
        """This scorer with each step's code digest taken now (``Step.with_source``): what a run keys on."""
        steps = tuple(s.with_source() for s in self.steps)
        unchanged = all(a is b for a, b in zip(steps, self.steps, strict=True))
        return self if unchanged else dataclasses.replace(self, steps=steps)

    @property
    def is_judge(self) -> bool:
        """True when a step may call an LLM: only such a scorer is ever judged more than once."""
        return any(s.is_judge for s in self.steps)

    def sampled(self, sample: int) -> Scorer:
        """This scorer as repeated judging's sample ``sample`` runs it: each judge step with that sample's seed
        (``Step.sampled``); sample 0 is this scorer."""
        if sample == 0 or not self.is_judge:
            return self
        return dataclasses.replace(self, steps=tuple(s.sampled(sample) for s in self.steps))

    def prompt_fingerprint(self) -> str | None:
        """What a judge's agreement with people was measured on, besides the model: the scorer's id and
        version and, per step, its parameters and code, and a judge step's instructions, output schema and
        generation settings (the model and a sample's seed left out). A calibration holds for this fingerprint
        only: an edited prompt or scoring rule is another instrument. None for a code scorer."""
        if not self.is_judge:
            return None
        parts = []
        for step in self.steps:
            part = {"step": step.name, "params": dict(step.params),
                    "code": step.code if step.code is not None else getattr(step.source(), "digest", None)}
            if step.judge is not None and step.judge_prompt is not None:
                model = step.judge_prompt.output_model
                part.update(instructions=step.instructions,
                            output_schema=output_schema(model) if model is not None else None,
                            judge={k: v for k, v in step.judge.key_fields().items() if k not in ("model", "seed")})
            parts.append(part)
        text = canonical_json({"scorer_id": self.id, "version": self.version, "steps": parts})
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def step(self, name: str) -> Step:
        """The step called ``name``."""
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(f"{self.id} has no step {name!r} (steps: {', '.join(s.name for s in self.steps)})")

    def context_for(
        self,
        step_name: str,
        run: ScorerInput | Mapping[str, Any],
        results: Mapping[str, Any] | None = None,
        score: float | None = None,
    ) -> StepContext:
        """The context ``step_name`` sees: only earlier steps' results, and the score only for generate_reason."""
        self.step(step_name)
        earlier = STEP_ORDER[: STEP_ORDER.index(step_name)]
        return StepContext(
            run=ScorerInput.from_call((run,), {}),
            results={k: v for k, v in (results or {}).items() if k in earlier},
            score=score if step_name == "generate_reason" else None,
        )

    async def arun(self, *args: Any, transport: JudgeTransport | None = None, **kwargs: Any) -> ScorerResult:
        """Score one run, step by step, retrying transient judge errors per ``JudgeSettings.retries``.

        Judge requests go through ``transport`` (default: litellm in this process)."""
        state = PipelineState(self, ScorerInput.from_call(args, kwargs))
        retries = self.judge.retries if self.judge is not None else 0

        async def run_step(step: Step, contexts: list[StepContext]) -> list[StepOutput]:
            return [await with_retries(lambda: step.arun(contexts[0], transport=transport), retries=retries,
                                       label=step.label)]

        await walk_steps([state], run_step)  # a step's exception propagates: a standalone run raises it
        return state.result()

    def run(self, *args: Any, transport: JudgeTransport | None = None, **kwargs: Any) -> ScorerResult:
        """Synchronous ``arun``; works inside a running event loop too (e.g. a notebook)."""
        return run_sync(self.arun(*args, transport=transport, **kwargs), thread_name=f"{self.id}-run")

    def assemble(self, run: ScorerInput | Mapping[str, Any], outputs: Mapping[str, StepOutput]) -> ScorerResult:
        """The ScorerResult from per-step outputs computed elsewhere (e.g. one Prefect task per step)."""
        run = ScorerInput.from_call((run,), {})
        missing = [s.name for s in self.steps if s.name not in outputs]
        if missing:
            raise ValueError(f"{self.id}: no output for step(s) {', '.join(missing)}")

        def part(name: str) -> StepOutput:
            return outputs.get(name) or StepOutput(result=None)

        return ScorerResult(
            run_id=run.run_id,
            score=float(outputs["generate_score"].result),
            reason=part("generate_reason").result,
            preprocess_prompt=part("preprocess").prompt,
            preprocess_step_result=part("preprocess").result,
            analyze_prompt=part("analyze").prompt,
            analyze_step_result=part("analyze").result,
            generate_score_prompt=part("generate_score").prompt,
            generate_reason_prompt=part("generate_reason").prompt,
            input=run.input,
            output=run.output,
            ground_truth=run.ground_truth,
            request_context=run.request_context,
            scorer_id=self.id,
            scorer_version=self.version,
            usage=[u for s in self.steps for u in part(s.name).usage],
        )


StepSpec = StepFunction | JudgePrompt


def create_scorer(
    id: str,  # noqa: A002 - Mastra's name for it
    *,
    generate_score: StepFunction,
    preprocess: StepSpec | None = None,
    analyze: StepSpec | None = None,
    generate_reason: StepSpec | None = None,
    version: str = "1",
    higher_is_better: bool = True,
    description: str = "",
    instructions: str = "",
    judge: JudgeSettings | Mapping[str, Any] | str | None = None,
    options: Mapping[str, Any] | None = None,
    step_params: Mapping[str, Mapping[str, Any]] | None = None,
) -> Scorer:
    """Build a scorer from step functions and judge prompts.

    Args:
        id: stable id, e.g. "my-scorer" (lowercase letters, digits, ".", "_", "-").
        generate_score: ``fn(ctx) -> number`` (sync or async); ``ctx.results`` holds earlier results.
        preprocess: the first step, a function or a ``JudgePrompt`` (e.g. extracting claims).
        analyze: the step after it, a function or a ``JudgePrompt`` (e.g. one verdict per claim).
        generate_reason: the last step, after the score, a function or a ``JudgePrompt`` that explains it.
        version: part of every cache key. A run also keys each step on its code: the whole source of the
            module that defines the step's function and of the user's own modules it imports, so an edit
            there re-runs the step without a version bump (bump it for a change outside those files).
        higher_is_better: the score's direction; False when a rise is a regression (a share of bad items).
        description: one line saying what the scorer measures, stored with runs and shown in reports.
        instructions: the judge's system message.
        judge: settings for judge steps (model string or partial settings; the model defaults to
            $EVALDUCK_JUDGE_MODEL). Needed only when a step is a JudgePrompt.
        options: JSON-able options, stored with runs; function steps key on them unless ``step_params``
            names their parameters.
        step_params: per-step parameters for cache keys, e.g. ``{"generate_score": {"scale": 2}}``, so that
            changing one step's parameter re-runs only the steps that use it.

    Example:
        >>> s = create_scorer("length", generate_score=lambda ctx: min(1.0, len(ctx.run.output) / 100))
        >>> s.run(input="q", output="x" * 50).score
        0.5
    """
    options = _checked(id, version, options, step_params)
    if not isinstance(higher_is_better, bool):
        raise ConfigError(f"`higher_is_better` must be True or False, got {higher_is_better!r}")
    specs = {"preprocess": preprocess, "analyze": analyze, "generate_score": generate_score, "generate_reason": generate_reason}
    needs_judge = any(isinstance(s, JudgePrompt) for s in specs.values())
    settings = JudgeSettings.resolve(judge) if needs_judge else None
    steps = tuple(
        Step(
            name=name, scorer_id=id, scorer_version=version, instructions=instructions,
            fn=None if isinstance(spec, JudgePrompt) else spec,
            judge_prompt=spec if isinstance(spec, JudgePrompt) else None,
            judge=settings if isinstance(spec, JudgePrompt) else None,
            # a function step keys on the scorer's options unless step_params names its own; a judge step on none
            params=dict((step_params or {}).get(name, {} if isinstance(spec, JudgePrompt) else options)),
        )
        for name in STEP_ORDER if (spec := specs[name]) is not None
    )
    return Scorer(id=id, version=version, higher_is_better=higher_is_better, description=description, steps=steps,
                  options=options, judge=settings)


def _checked(
    scorer_id: Any, version: Any, options: Mapping[str, Any] | None, step_params: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The options as a dict, after the checks a scorer's identity and options must pass."""
    if not isinstance(scorer_id, str) or not _ID.fullmatch(scorer_id):
        raise ConfigError(f"`id` must be lowercase letters, digits, '.', '_' or '-', got {scorer_id!r}")
    if not isinstance(version, str) or not version:
        raise ConfigError(f"`version` must be a non-empty string, got {version!r}")
    unknown = sorted(set(step_params or {}) - set(STEP_ORDER))
    if unknown:
        raise ConfigError(f"`step_params` has unknown step(s) {', '.join(unknown)}")
    checked = dict(options or {})
    try:
        canonical_json(checked)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"`options` must be JSON-serialisable: {exc}") from None
    return checked
