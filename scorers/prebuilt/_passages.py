"""Which passages a context-reading judge scorer judges against: SCORERS.md 0.1's context resolution, the
one statement of it (the scorers' docstrings point here).

The rule: the run's ``context`` when given (even ``[]``: an empty context is judged, not replaced), else
the scorer option ``context``, else (faithfulness only: ``tool_results_fallback``) the content of the
output's ``role: "tool"`` messages when there are any, else the run is ``NotScorable``, naming where to
give one.

Faithfulness, hallucination, context precision and context relevance all call ``resolve_context`` in their
first step, and declare their ``context`` option as ``ContextOption``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

from evalduck.scorers._context import ScorerInput
from evalduck.scorers._errors import NotScorable
from evalduck.scorers._tools import tool_results

__all__ = ("ContextOption", "check_context_option", "resolve_context")


def check_context_option(value: Any) -> list[str] | None:
    """A scorer's ``context`` option: a non-empty string (one passage) or a non-empty list of strings."""
    if value is None:
        return None
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(p, str) for p in value):
        return list(value)
    raise ValueError(f"`context` must be a non-empty string or a non-empty list of strings (passages), got {value!r:.80}")


ContextOption = Annotated[list[str] | None, BeforeValidator(check_context_option)]


def resolve_context(
    run: ScorerInput, option: list[str] | None, scorer_id: str, *, tool_results_fallback: bool = False
) -> list[str]:
    """The passages by the rule above, or ``NotScorable``."""
    if run.context is not None:
        return list(run.context)
    if option is not None:
        return list(option)
    if tool_results_fallback:
        results = tool_results(run.output)
        if results:
            return results
    where = "the run's `context` (a dataset row's \"context\": a list of passages) or the scorer option `context`"
    if tool_results_fallback:
        where += ", or tool results (`role: \"tool\"` messages) in the output"
    raise NotScorable(f"{scorer_id} needs a context to judge against: no context was given; give {where}")
