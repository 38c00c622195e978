"""The prebuilt scorers (SPEC 3, SCORERS.md), one module each; ``PREBUILT`` lists them by id (``_catalog``)."""

from __future__ import annotations

from scorers.prebuilt._catalog import PREBUILT
from scorers.prebuilt._declare import PrebuiltScorer
from scorers.prebuilt.answer_relevancy import create_answer_relevancy_scorer
from scorers.prebuilt.completeness import create_completeness_scorer
from scorers.prebuilt.content_similarity import create_content_similarity_scorer
from scorers.prebuilt.keyword_coverage import create_keyword_coverage_scorer
from scorers.prebuilt.textual_difference import create_textual_difference_scorer
from scorers.prebuilt.tone import create_tone_scorer
from scorers.prebuilt.tool_call_accuracy_code import create_tool_call_accuracy_scorer_code

__all__ = (
    "PREBUILT",
    "PrebuiltScorer",
    "create_answer_relevancy_scorer",
    "create_textual_difference_scorer",
    "create_tone_scorer",
    "create_completeness_scorer",
    "create_content_similarity_scorer",
    "create_keyword_coverage_scorer",
    "create_tool_call_accuracy_scorer_code",
)
