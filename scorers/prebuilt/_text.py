"""Which texts the prebuilt scorers compare, read from the run with the "given = not None" rule."""

from __future__ import annotations

from evalduck.scorers._context import ScorerInput
from evalduck.scorers._errors import ScorerInputError
from evalduck.scorers._messages import input_text, output_text, plain_text

__all__ = ("answer", "question", "reference_or_input")


def question(run: ScorerInput, scorer_id: str) -> str:
    """The first user message of the input (required)."""
    if run.input is None:
        raise ScorerInputError(f"{scorer_id} needs `input` (the question the output answers)")
    return input_text(run.input)


def answer(run: ScorerInput) -> str:
    """The assistant text of the output."""
    return output_text(run.output)


def reference_or_input(run: ScorerInput, scorer_id: str) -> str:
    """The ground truth when given (even ""), else the input."""
    if run.ground_truth is not None:
        return plain_text(run.ground_truth)
    if run.input is not None:
        return input_text(run.input)
    raise ScorerInputError(f"{scorer_id} needs `ground_truth` or `input` to compare the output with")
