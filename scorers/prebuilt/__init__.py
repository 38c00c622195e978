"""The prebuilt scorers (SPEC 3, SCORERS.md), one module each; ``PREBUILT`` lists them by id (``_catalog``)."""

from __future__ import annotations

from scorers.prebuilt._catalog import PREBUILT
from scorers.prebuilt._declare import PrebuiltScorer
from scorers.prebuilt.answer_relevancy import create_answer_relevancy_scorer
from scorers.prebuilt.textual_difference import create_textual_difference_scorer
from scorers.prebuilt.tone import create_tone_scorer

__all__ = (
    "PREBUILT",
    "PrebuiltScorer",
    "create_answer_relevancy_scorer",
    "create_textual_difference_scorer",
    "create_tone_scorer",
)
