"""A pipeline step: a plain function (sync or async) or a judge prompt. Each step runs on its own from a
StepContext, so an orchestrator can run, cache and retry steps one by one."""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from evalduck.scorers._cache_key import SourceDigest, canonical_json, code_digest, hash_components
from evalduck.scorers._context import STEP_ORDER, StepContext
from evalduck.scorers._errors import ConfigError, StepResultError
from evalduck.scorers._judge import JudgeSettings, ask_judge, output_schema
from evalduck.scorers._result import StepOutput
from evalduck.scorers._transport import JudgeTransport

__all__ = ("JudgePrompt", "Step", "StepFunction")

StepFunction = Callable[[StepContext], Any]


@dataclass(frozen=True, kw_only=True)
class JudgePrompt:
    """How a judge step asks: the user prompt from the context, and what the answer must look like.

    Args:
        prompt: builds the user message (the system message is the scorer's instructions).
        output_model: the pydantic model the JSON answer must validate against (preprocess/analyze);
            None for generate_reason, whose answer is free text.
        check: rules a schema cannot express, e.g. one verdict per statement; raises ValueError.
        shortcut: returns the result without asking (e.g. ``{"statements": []}`` for an empty output),
            or None to ask the judge.
    """

    prompt: Callable[[StepContext], str]
    output_model: type[BaseModel] | None = None
    check: Callable[[StepContext, Any], None] | None = None
    shortcut: Callable[[StepContext], Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Step:
    """One step of one scorer. Build steps with ``create_scorer``; run one with ``await step.arun(ctx)``
    (a judge step's requests go through ``arun``'s ``transport``)."""

    name: str
    scorer_id: str
    scorer_version: str
    fn: StepFunction | None = None
    judge_prompt: JudgePrompt | None = None
    judge: JudgeSettings | None = None
    instructions: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    # The digest of the code that computes the step, in its cache key beside the version: a prebuilt scorer's
    # package modules (``source_digest``, set by its factory); for a custom step, set once per run by the flow
    # (``with_source``), else computed at each key from its module and the user's modules it imports.
    code: str | None = None

    def __post_init__(self) -> None:
        label = f"{self.scorer_id}.{self.name}"
        if self.name not in STEP_ORDER:
            raise ConfigError(f"`step name` must be one of {', '.join(STEP_ORDER)}, got {self.name!r}")
        if (self.fn is None) == (self.judge_prompt is None):
            raise ConfigError(f"{label}: give exactly one of a function or a JudgePrompt")
        if self.fn is not None and not callable(self.fn):
            raise ConfigError(f"{label}: the step function must be callable, got {type(self.fn).__name__}")
        if self.judge_prompt is not None:
            if self.name == "generate_score":
                raise ConfigError(f"{label}: generate_score must be a function (the score is computed, not asked)")
            if self.judge is None:
                raise ConfigError(f"{label}: a judge step needs judge settings")
            if self.name in ("preprocess", "analyze") and self.judge_prompt.output_model is None:
                raise ConfigError(f"{label}: a {self.name} judge step needs an `output_model`")
        try:
            canonical_json(dict(self.params))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{label}: step parameters must be JSON-serialisable: {exc}") from None

    @property
    def label(self) -> str:
        """``<scorer id>.<step name>``, as used in task names and error messages."""
        return f"{self.scorer_id}.{self.name}"

    @property
    def is_judge(self) -> bool:
        """True when the step may call an LLM."""
        return self.judge_prompt is not None

    async def arun(self, ctx: StepContext, *, transport: JudgeTransport | None = None) -> StepOutput:
        """Run once (a judge step: one request, plus one repair request after an invalid answer).

        A judge step sends its requests through ``transport`` (default: litellm in this process); a
        function step ignores it.

        Raises:
            JudgeTransientError, JudgeConfigError, InvalidJudgeAnswer: from the judge; retrying is the caller's job.
            StepResultError: the result is not JSON-serialisable (or generate_score's is not a number).
        """
        if self.fn is not None:
            result = self.fn(ctx)
            if inspect.isawaitable(result):
                result = await result
            output = StepOutput(result=result)
        else:
            output = await self._ask(ctx, transport)
        self._check_result(output.result)
        return output

    async def _ask(self, ctx: StepContext, transport: JudgeTransport | None) -> StepOutput:
        jp = self.judge_prompt
        assert jp is not None and self.judge is not None
        if jp.shortcut is not None:
            shortcut = jp.shortcut(ctx)
            if shortcut is not None:
                return StepOutput(result=shortcut)
        prompt = jp.prompt(ctx)
        check = (lambda parsed: jp.check(ctx, parsed)) if jp.check is not None else None
        result, usage = await ask_judge(
            self.judge,
            label=self.label,
            system=self.instructions,
            prompt=prompt,
            output_model=jp.output_model,
            check=check,
            transport=transport,
        )
        return StepOutput(result=result, prompt=prompt, usage=usage)

    def _check_result(self, result: Any) -> None:
        try:
            canonical_json(result)
        except (TypeError, ValueError) as exc:
            raise StepResultError(
                f"{self.label} returned a result that is not JSON-serialisable ({exc}); "
                "return dicts, lists, strings, numbers, booleans or None"
            ) from None
        if self.name == "generate_score":
            if isinstance(result, bool) or not isinstance(result, (int, float)) or not math.isfinite(result):
                raise StepResultError(f"{self.label} must return a finite number, got {result!r:.80}")
        if self.name == "generate_reason" and result is not None and not isinstance(result, str):
            raise StepResultError(f"{self.label} must return a string, got {type(result).__name__}")

    def source(self) -> SourceDigest | None:
        """The code this step runs as its files key it: the module of its function (a judge step: of its
        prompt builder) and the user's own modules that imports (``code_digest``)."""
        jp = self.judge_prompt
        return code_digest(self.fn if self.fn is not None else jp.prompt)  # type: ignore[union-attr]

    def with_source(self) -> Step:
        """This step with ``code`` taken now (a prebuilt one's is kept): a run keys all its items on the code
        as it was when the run started, not on an edit made while it goes (which the loaded code lacks)."""
        if self.code is not None:
            return self
        found = self.source()
        return self if found is None else dataclasses.replace(self, code=found.digest)

    def sampled(self, sample: int) -> Step:
        """This step as repeated judging's sample ``sample`` asks (``JudgeSettings.sampled``); a code step is
        deterministic and stays itself."""
        if self.judge is None or sample == 0:
            return self
        return dataclasses.replace(self, judge=self.judge.sampled(sample))

    def key_components(self, ctx: StepContext) -> dict[str, Any]:
        """The named components of this step's cache key (see ``cache_key``)."""
        earlier = STEP_ORDER[: STEP_ORDER.index(self.name)]
        components: dict[str, Any] = {
            "scorer_id": self.scorer_id,
            "scorer_version": self.scorer_version,
            "step": self.name,
            "params": dict(self.params),
            "run": ctx.run.fields_for_key(),
            "earlier_results": {name: ctx.results[name] for name in earlier if name in ctx.results},
            "score": ctx.score if self.name == "generate_reason" else None,
        }
        code = self.code if self.code is not None else getattr(self.source(), "digest", None)
        if code is not None:
            components["code"] = code
        if self.judge_prompt is not None and self.judge is not None:
            model = self.judge_prompt.output_model
            components["judge"] = {
                **self.judge.key_fields(),
                "instructions": self.instructions,
                "output_schema": output_schema(model) if model is not None else None,
            }
        return components

    def cache_key(self, ctx: StepContext) -> str:
        """sha256 hex over canonical JSON of: key format version, scorer id and version, the digest of the
        step's code (``code``: its module's whole source and the modules of its kind that imports), step name, the
        step's own parameters, judge model + generation settings + instructions + output schema (judge
        steps), the run's input/output/ground_truth/request_context (and context, expected_tool and
        expected_tool_order when given), earlier steps' results and, for
        generate_reason, the score. Never the run id, timeout, retries, api_base or keys.

        It is ``hash_components(self.key_components(ctx))``, serialised whole for every key: text put together
        from parts serialised once was measured no faster within benchmark (b)'s spread
        (docs/benchmarks-history.md, 'Step cache keys')."""
        return hash_components(self.key_components(ctx))
