"""The three seed scorers: answer relevancy (LLM judge), tone consistency and textual difference (code).

``PREBUILT`` is the one list of them, by id: the flows' scorer ids (the ``ScorerSpec`` Literal, the
registry, the CLI's ``--scorer`` help) are all read from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from scorers.prebuilt import answer_relevancy, textual_difference, tone
from scorers.prebuilt.answer_relevancy import create_answer_relevancy_scorer
from scorers.prebuilt.textual_difference import create_textual_difference_scorer
from scorers.prebuilt.tone import create_tone_scorer

if TYPE_CHECKING:
    from scorers._scorer import Scorer

__all__ = (
    "PREBUILT",
    "PrebuiltScorer",
    "create_answer_relevancy_scorer",
    "create_textual_difference_scorer",
    "create_tone_scorer",
)


@dataclass(frozen=True)
class PrebuiltScorer:
    """A prebuilt scorer: its id and version, its factory (``factory(options)``), and whether it calls a judge."""

    id: str
    version: str
    factory: Callable[..., Scorer]
    needs_judge: bool


PREBUILT: Mapping[str, PrebuiltScorer] = MappingProxyType({
    p.id: p
    for p in (
        PrebuiltScorer(answer_relevancy.SCORER_ID, answer_relevancy.VERSION, create_answer_relevancy_scorer,
                       needs_judge=True),
        PrebuiltScorer(tone.SCORER_ID, tone.VERSION, create_tone_scorer, needs_judge=False),
        PrebuiltScorer(textual_difference.SCORER_ID, textual_difference.VERSION, create_textual_difference_scorer,
                       needs_judge=False),
    )
})

