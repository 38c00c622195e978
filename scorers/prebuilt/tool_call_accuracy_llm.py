"""Tool-call accuracy (LLM judge), SCORERS.md 1.9: whether each tool the agent called was the right one
for the request.

preprocess (code) extracts the output's tool calls (SCORERS.md 0.2), analyze judges each call appropriate
or not and names the available tools the request needed but did not get, generate_score is the share of
appropriate calls (``round_half_up``), or, with no calls, 1 unless a tool was missing. No ``scale``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, field_validator

from evalduck.scorers._context import StepContext
from evalduck.scorers._rounding import round_half_up
from evalduck.scorers._scorer import Scorer
from evalduck.scorers._step import JudgePrompt
from evalduck.scorers._tools import tool_call_infos
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._judged import block, json_block, judge_scorer, one_per, reason_prompt, step_result
from evalduck.scorers.prebuilt._options import JudgeOptions, parse_options
from evalduck.scorers.prebuilt._text import question

__all__ = ("SCORER_ID", "VERSION", "ToolEvaluations", "create_tool_call_accuracy_scorer_llm", "tool_accuracy_score")

SCORER_ID = "llm-tool-call-accuracy-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "Share of the agent's tool calls right for the request (LLM judge; no call: 1, or 0 if a tool was needed)"

INSTRUCTIONS = """\
You review an agent's tool use: whether each tool it called was the right one for the user's request,
given the tools it had. Follow the task's instructions exactly and reply in the format it asks for."""


class ToolEvaluation(BaseModel):
    toolCalled: str = Field(description="The called tool's name, as listed.")
    wasAppropriate: bool = Field(description="Whether calling this tool was right for the request.")
    reasoning: str = Field(description="One short sentence justifying the judgement.")


class ToolEvaluations(BaseModel):
    """analyze output: one evaluation per call, in call order, and the tools that should have been called."""

    evaluations: list[ToolEvaluation] = Field(description="Exactly one evaluation per tool call, in the same order.")
    missingTools: list[str] = Field(description="Available tools the request needed that were not called.")


def _tool(value: Any, where: str) -> dict[str, str]:
    """``{"name", "description"}`` from a plain tool or an OpenAI tool definition."""
    if not isinstance(value, Mapping):
        raise ValueError(f"`{where}` must be a tool {{'name', 'description'}} or an OpenAI tool definition, got {value!r:.80}")
    spec = value["function"] if isinstance(value.get("function"), Mapping) else value
    name, description = spec.get("name"), spec.get("description", "")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"`{where}.name` must be a non-empty string, got {name!r:.80}")
    if not isinstance(description, str):
        raise ValueError(f"`{where}.description` must be a string, got {description!r:.80}")
    return {"name": name, "description": description}


class ToolCallAccuracyOptions(JudgeOptions):
    available_tools: list[dict[str, str]] = []

    @field_validator("available_tools", mode="before")
    @classmethod
    def _tools(cls, value: Any) -> list[dict[str, str]]:
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"`available_tools` must be a list of tools, got {value!r:.80}")
        return [_tool(t, f"available_tools[{i}]") for i, t in enumerate(value)]


def tool_accuracy_score(analysis: Mapping[str, Any]) -> float:
    """The share of appropriate calls, rounded half up; with no calls, 1 unless a needed tool was missing."""
    evaluations = list(analysis.get("evaluations") or [])
    if not evaluations:
        return 0.0 if analysis.get("missingTools") else 1.0
    return round_half_up(sum(bool(e["wasAppropriate"]) for e in evaluations) / len(evaluations))


def _calls(ctx: StepContext) -> list[str]:
    return step_result(ctx, "preprocess", "actualTools")


def preprocess(ctx: StepContext) -> dict[str, Any]:
    """The output's tool calls; the request (input) is required."""
    question(ctx.run, SCORER_ID)
    infos = tool_call_infos(ctx.run.output)
    return {"actualTools": [i["toolName"] for i in infos], "hasToolCalls": bool(infos), "toolCallInfos": infos}


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION, needs_judge=True, reads=("input", "output tool calls"))
def create_tool_call_accuracy_scorer_llm(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """Whether each tool the agent called was the right one for the request, by an LLM judge.

    Args:
        options: a mapping of the options below (snake_case or Mastra's camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        model: litellm model string; default $EVALDUCK_JUDGE_MODEL, a ConfigError if neither is set.
        available_tools: the tools the agent had: ``{"name", "description"}`` or OpenAI tool definitions
            (``{"type": "function", "function": {"name", "description", ...}}``); default [].
        temperature, timeout, api_base, max_tokens, retries, extra, judge: judge settings (JudgeSettings).

    Example:
        >>> scorer = create_tool_call_accuracy_scorer_llm(model="openai/gpt-4o-mini", availableTools=[
        ...     {"type": "function", "function": {"name": "get_weather", "description": "Weather by city."}}])
        >>> scorer.options["available_tools"]
        [{'name': 'get_weather', 'description': 'Weather by city.'}]
    """
    opts = parse_options(ToolCallAccuracyOptions, options, kwargs)
    tools = opts.available_tools

    def prompt(ctx: StepContext) -> str:
        """Always asked, even with no calls: whether the request needed a tool is itself the question."""
        calls = _calls(ctx)
        return f"""\
An agent answered the user request below with the tool calls listed (in order; possibly none). For each
call, decide whether calling that tool was appropriate for the request, given the available tools. Give
exactly {len(calls)} evaluation(s), one per call, in the same order. Then list in `missingTools` the
available tools the request needed that the agent did not call (empty when none was needed or all were
called).

{block("user_request", question(ctx.run, SCORER_ID))}

{json_block("available_tools", tools)}

{json_block("tools_called", calls)}

Reply with a JSON object {{"evaluations": [{{"toolCalled": "...", "wasAppropriate": true | false,
"reasoning": "..."}}, ...], "missingTools": [...]}}."""

    def reason(ctx: StepContext) -> str:
        """Shows the request, the calls and the evaluations, so the explanation names wrong and missing tools."""
        return reason_prompt(
            "tool-call accuracy (the share of appropriate tool calls; higher is better)",
            "The agent's tool calls below received the accuracy score given here. Explain why, naming "
            "inappropriate calls and missing tools.",
            block("user_request", question(ctx.run, SCORER_ID)),
            json_block("tools_called", _calls(ctx)),
            json_block("analysis", ctx.results.get("analyze") or {}),
            score=ctx.score,
        )

    return judge_scorer(
        SCORER_ID,
        opts,
        version=VERSION,
        description=DESCRIPTION,
        instructions=INSTRUCTIONS,
        options={"available_tools": tools},
        preprocess=preprocess,
        analyze=JudgePrompt(prompt=prompt, output_model=ToolEvaluations, check=one_per(_calls, "evaluations", "tool call")),
        generate_score=lambda ctx: tool_accuracy_score(ctx.results.get("analyze") or {}),
        generate_reason=JudgePrompt(prompt=reason),
        step_params={"preprocess": {}, "analyze": {"available_tools": tools}, "generate_score": {}},
    )
