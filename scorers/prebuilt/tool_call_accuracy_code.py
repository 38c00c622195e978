"""Tool-call accuracy (code), SCORERS.md 2.4: 1 when the output called the expected tool (or the expected
tools in order), else 0. The expectations come from the run (a dataset row's ``expectedTool`` /
``expectedToolOrder``) when it gives either, else from the options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Annotated, Any

from pydantic import BeforeValidator, StrictBool

from evalduck.scorers._context import ScorerInput, check_expected_tool, check_tool_order
from evalduck.scorers._errors import NotScorable
from evalduck.scorers._scorer import Scorer
from evalduck.scorers._tools import tool_call_infos
from evalduck.scorers.prebuilt._code import code_scorer
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._options import OptionsModel, parse_options

__all__ = ("SCORER_ID", "VERSION", "create_tool_call_accuracy_scorer_code", "order_called", "tool_call_analysis",
           "tool_call_score")

SCORER_ID = "code-tool-call-accuracy-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "1 when the output called the expected tool (or the expected tools in order), else 0"


class ToolCallAccuracyOptions(OptionsModel):
    expected_tool: Annotated[str | None, BeforeValidator(check_expected_tool)] = None
    expected_tool_order: Annotated[list[str] | None, BeforeValidator(check_tool_order)] = None
    strict_mode: StrictBool = False


def _expectations(run: ScorerInput, options: ToolCallAccuracyOptions) -> tuple[str | None, list[str] | None]:
    """The run's pair when it gives either field, else the options' pair; neither: NotScorable."""
    if run.expected_tool is not None or run.expected_tool_order is not None:
        return run.expected_tool, run.expected_tool_order
    if options.expected_tool is not None or options.expected_tool_order is not None:
        return options.expected_tool, options.expected_tool_order
    raise NotScorable(
        f"{SCORER_ID} needs a tool expectation: no expected tool was given; give the run's `expected_tool` or "
        "`expected_tool_order` (a dataset row's \"expectedTool\" / \"expectedToolOrder\"), or the scorer "
        "option `expected_tool` or `expected_tool_order`"
    )


def order_called(actual: Sequence[str], expected: Sequence[str], strict: bool) -> bool:
    """Strict: exactly the expected calls. Otherwise each expected tool's first call comes after the
    previous one's (other calls in between allowed)."""
    if strict:
        return list(actual) == list(expected)
    if any(tool not in actual for tool in expected):
        return False
    firsts = [list(actual).index(tool) for tool in expected]
    return all(a < b for a, b in pairwise(firsts))


def tool_call_analysis(run: ScorerInput, options: ToolCallAccuracyOptions) -> dict[str, Any]:
    """The preprocess result: the resolved expectations, the calls made, and both tests' outcomes."""
    expected_tool, expected_order = _expectations(run, options)
    infos = tool_call_infos(run.output)
    actual = [info["toolName"] for info in infos]
    strict = options.strict_mode
    if expected_tool is None:
        correct_tool = False
    elif strict:
        correct_tool = actual == [expected_tool]
    else:
        correct_tool = expected_tool in actual
    return {
        "expectedTool": expected_tool,
        "actualTools": actual,
        "strictMode": strict,
        "expectedToolOrder": expected_order,
        "hasToolCalls": bool(actual),
        "correctToolCalled": correct_tool,
        "toolCallInfos": infos,
        "correctOrderCalled": None if expected_order is None else order_called(actual, expected_order, strict),
    }


def tool_call_score(analysis: Mapping[str, Any]) -> float:
    """0 without tool calls; else the order test when an order is expected, the single-tool test otherwise."""
    if not analysis["hasToolCalls"]:
        return 0.0
    if analysis["expectedToolOrder"]:
        return 1.0 if analysis["correctOrderCalled"] else 0.0
    return 1.0 if analysis["correctToolCalled"] else 0.0


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION,
          needs_judge=False, reads=("output tool calls", "expected tool or tool order"))
def create_tool_call_accuracy_scorer_code(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """Whether the output's tool calls include the expected tool, or the expected tools in order (0 or 1).

    Args:
        options: a mapping of the options below (snake_case or camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        expected_tool: the tool the output should call (a run's ``expected_tool`` replaces it).
        expected_tool_order: the tools it should call, in order (wins over ``expected_tool``).
        strict_mode: only that one call / exactly those calls (default False).

    Example:
        >>> calls = [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "search"}}]}]
        >>> create_tool_call_accuracy_scorer_code(expected_tool="search").run(output=calls).score
        1.0
    """
    opts = parse_options(ToolCallAccuracyOptions, options, kwargs)
    return code_scorer(
        SCORER_ID, VERSION, DESCRIPTION,
        options=opts.model_dump(), preprocess=(lambda ctx: tool_call_analysis(ctx.run, opts), opts.model_dump()),
        generate_score=(lambda ctx: tool_call_score(ctx.results["preprocess"]), {}),
    )
