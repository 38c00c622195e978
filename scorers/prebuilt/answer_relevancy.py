"""Answer relevancy (LLM judge), SPEC 3.1: how much of the output addresses the question.

preprocess splits the output into statements, analyze gives each a verdict (yes / unsure / no),
generate_score is ``((n_yes + uncertainty_weight * n_unsure) / n_statements) * scale`` rounded half up to
2 decimals, and generate_reason explains the given score. Relevance is judged, never factual correctness.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from evalduck.scorers._context import StepContext
from evalduck.scorers._rounding import round_half_up
from evalduck.scorers._scorer import Scorer
from evalduck.scorers._step import JudgePrompt
from evalduck.scorers.prebuilt._declare import prebuilt
from evalduck.scorers.prebuilt._judged import judge_scorer
from evalduck.scorers.prebuilt._options import JudgeOptions, ScaleOptions, parse_options
from evalduck.scorers.prebuilt._text import answer, question

__all__ = ("SCORER_ID", "VERSION", "Statements", "Verdict", "Verdicts", "create_answer_relevancy_scorer", "relevancy_score")

SCORER_ID = "answer-relevancy-scorer"
VERSION = "1"
# What the score measures (its direction is said apart): `show`, the run's summary and the report print it.
DESCRIPTION = "Share of the output's statements that address the question (LLM judge; relevance, not correctness)"
VERDICTS = ("yes", "unsure", "no")

INSTRUCTIONS = """\
You evaluate whether an answer is relevant to the question it replies to. You judge relevance only:
whether each part of the answer addresses what was asked. You never judge whether it is factually
correct: a wrong answer that tries to answer the question is still about the question. Follow the
task's instructions exactly and reply in the format it asks for."""


class Statements(BaseModel):
    """preprocess output: the answer split into statements."""

    statements: list[str] = Field(
        description="The answer's meaningful statements, in order, each keeping the context it needs."
    )


class Verdict(BaseModel):  # noqa: D101 - a docstring would enter the JSON schema the judge is sent
    result: str = Field(
        description="'yes' (directly answers the question), 'unsure' (partial, indirect, or a wrong answer "
        "that still addresses the question) or 'no' (unrelated to the question).",
        json_schema_extra={"enum": list(VERDICTS)},
    )
    reason: str = Field(description="One short sentence justifying the verdict.")

    @field_validator("result")
    @classmethod
    def _known_verdict(cls, value: str) -> str:
        if value.strip().lower() not in VERDICTS:
            raise ValueError(f"`result` must be one of yes, unsure, no, got {value!r}")
        return value


class Verdicts(BaseModel):
    """analyze output: one verdict per statement, in the statements' order."""

    results: list[Verdict] = Field(description="Exactly one verdict per statement, in the same order.")


class AnswerRelevancyOptions(ScaleOptions, JudgeOptions):
    uncertainty_weight: float = 0.3

    @field_validator("uncertainty_weight")
    @classmethod
    def _weight(cls, value: float) -> float:
        if not 0 <= value <= 1:
            raise ValueError(f"`uncertainty_weight` must be between 0 and 1, got {value!r}")
        return value


def relevancy_score(verdicts: Sequence[str], uncertainty_weight: float, scale: float) -> float:
    """``((n_yes + w * n_unsure) / n) * scale``, rounded half up to 2 decimals; 0 for no verdicts."""
    if not verdicts:
        return 0.0
    normalised = [v.strip().lower() for v in verdicts]
    n_yes, n_unsure = normalised.count("yes"), normalised.count("unsure")
    score = round_half_up((n_yes + uncertainty_weight * n_unsure) / len(normalised) * scale)
    return min(score, scale)  # a scale with more than 2 decimals must not round past itself


def _block(tag: str, text: str) -> str:
    return f"<{tag}>\n{text}\n</{tag}>"


def _statements(ctx: StepContext) -> list[str]:
    return list((ctx.results.get("preprocess") or {}).get("statements") or [])


def _preprocess_prompt(ctx: StepContext) -> str:
    return f"""\
Split the answer below into its meaningful statements, so that each statement can be judged on its own
for relevance to the question.
- Keep the context a statement needs to be understood (do not strip the subject or the qualifier).
- Do not split too finely: a sentence that makes one point is one statement.
- A one-word or very short answer is one statement. An error message is one statement.
- Keep the answer's own wording and order; add nothing and leave nothing out.

{_block("question", question(ctx.run, SCORER_ID))}

{_block("output", answer(ctx.run))}

Reply with a JSON object {{"statements": [...]}}."""


def _analyze_prompt(ctx: StepContext) -> str:
    statements = _statements(ctx)
    return f"""\
For each statement below, decide whether it is relevant to the question:
- "yes": it directly answers the question, or gives information the question asks for.
- "unsure": it is partly or indirectly relevant, or it is a wrong answer that still addresses the question.
- "no": it is unrelated to the question.
Judge relevance only, never factual correctness. Give exactly {len(statements)} verdict(s), one per
statement, in the same order, each with a one-sentence reason.

{_block("question", question(ctx.run, SCORER_ID))}

{_block("statements", json.dumps(statements, ensure_ascii=False, indent=1))}

Reply with a JSON object {{"results": [{{"result": "yes" | "unsure" | "no", "reason": "..."}}, ...]}}."""


def _reason_prompt(ctx: StepContext) -> str:
    verdicts = (ctx.results.get("analyze") or {}).get("results") or []
    pairs = [{"statement": s, **v} for s, v in zip(_statements(ctx), verdicts, strict=True)]
    return f"""\
The answer below received the relevancy score given here. Explain in two or three sentences why it got
this score, citing the statements that were relevant, partly relevant or unrelated. Use the score as
given; do not recompute or change it. Reply in plain text.

{_block("question", question(ctx.run, SCORER_ID))}

{_block("output", answer(ctx.run))}

{_block("verdicts", json.dumps(pairs, ensure_ascii=False, indent=1))}

{_block("score", f"{ctx.score}")}"""


def _one_verdict_per_statement(ctx: StepContext, parsed: Verdicts) -> None:
    expected, got = len(_statements(ctx)), len(parsed.results)
    if got != expected:
        raise ValueError(f"expected {expected} verdict(s), one per statement, got {got}")


def _empty_output(ctx: StepContext) -> Any:
    return {"statements": []} if not answer(ctx.run).strip() else None


def _no_statements(ctx: StepContext) -> Any:
    return {"results": []} if not _statements(ctx) else None


def _no_statements_reason(ctx: StepContext) -> Any:
    if _statements(ctx):
        return None
    return f"The score is {ctx.score} because the output is empty, so nothing in it addresses the question."


@prebuilt(SCORER_ID, VERSION, description=DESCRIPTION, needs_judge=True, reads=("input", "output"))
def create_answer_relevancy_scorer(options: Mapping[str, Any] | None = None, **kwargs: Any) -> Scorer:
    """How relevant the output is to the question, by an LLM judge.

    Args:
        options: a mapping of the options below (snake_case or Mastra's camelCase).
        **kwargs: the options below as keywords, which win over ``options``.
        model: litellm model string; default $EVALDUCK_JUDGE_MODEL, a ConfigError if neither is set.
        uncertainty_weight: weight of 'unsure' verdicts, 0..1 (default 0.3).
        scale: the score's maximum, > 0 (default 1.0).
        temperature, timeout, api_base, max_tokens, retries, extra: judge settings (see JudgeSettings),
            or ``judge=JudgeSettings(...)`` as a whole.

    Example:
        >>> scorer = create_answer_relevancy_scorer(model="openai/gpt-4o-mini", uncertainty_weight=0.5)
        >>> scorer.steps[0].name
        'preprocess'
    """
    opts = parse_options(AnswerRelevancyOptions, options, kwargs)
    weight, scale = opts.uncertainty_weight, opts.scale

    def generate_score(ctx: StepContext) -> float:
        verdicts = [v["result"] for v in (ctx.results.get("analyze") or {}).get("results") or []]
        return relevancy_score(verdicts, weight, scale)

    return judge_scorer(
        SCORER_ID,
        opts,
        version=VERSION,
        description=DESCRIPTION,
        instructions=INSTRUCTIONS,
        options={"uncertainty_weight": weight, "scale": scale},
        preprocess=JudgePrompt(prompt=_preprocess_prompt, output_model=Statements, shortcut=_empty_output),
        analyze=JudgePrompt(
            prompt=_analyze_prompt, output_model=Verdicts, check=_one_verdict_per_statement, shortcut=_no_statements
        ),
        generate_score=generate_score,
        generate_reason=JudgePrompt(prompt=_reason_prompt, shortcut=_no_statements_reason),
        step_params={"generate_score": {"uncertainty_weight": weight, "scale": scale}},
    )
