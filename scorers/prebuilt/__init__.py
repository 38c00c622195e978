"""The three seed scorers: answer relevancy (LLM judge), tone consistency and textual difference (code)."""

from __future__ import annotations

from scorers.prebuilt.answer_relevancy import create_answer_relevancy_scorer
from scorers.prebuilt.textual_difference import create_textual_difference_scorer
from scorers.prebuilt.tone import create_tone_scorer

__all__ = ("create_answer_relevancy_scorer", "create_textual_difference_scorer", "create_tone_scorer")
