"""SCORERS.md 0.6: each prebuilt factory declares itself, and PREBUILT lists them all in the contract's order."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from evalduck import scorers
from evalduck.scorers import PREBUILT, ConfigError, PrebuiltScorer, create_scorer

# SCORERS.md 0.6: the seeds, then the page's table, in order.
CONTRACT = (
    ("answer-relevancy-scorer", "create_answer_relevancy_scorer", True, True),
    ("tone-scorer", "create_tone_scorer", False, True),
    ("textual-difference-scorer", "create_textual_difference_scorer", False, True),
    ("faithfulness-scorer", "create_faithfulness_scorer", True, True),
    ("hallucination-scorer", "create_hallucination_scorer", True, False),
    ("answer-similarity-scorer", "create_answer_similarity_scorer", True, True),
    ("context-precision-scorer", "create_context_precision_scorer", True, True),
    ("context-relevance-scorer", "create_context_relevance_scorer", True, True),
    ("bias-scorer", "create_bias_scorer", True, False),
    ("toxicity-scorer", "create_toxicity_scorer", True, False),
    ("prompt-alignment-scorer", "create_prompt_alignment_scorer", True, True),
    ("llm-tool-call-accuracy-scorer", "create_tool_call_accuracy_scorer_llm", True, True),
    ("completeness-scorer", "create_completeness_scorer", False, True),
    ("content-similarity-scorer", "create_content_similarity_scorer", False, True),
    ("keyword-coverage-scorer", "create_keyword_coverage_scorer", False, True),
    ("code-tool-call-accuracy-scorer", "create_tool_call_accuracy_scorer_code", False, True),
)
IDS = [c[0] for c in CONTRACT]


def test_read_only_and_in_the_contracts_order() -> None:
    assert isinstance(PREBUILT, Mapping)
    with pytest.raises(TypeError):
        PREBUILT["x"] = PREBUILT["tone-scorer"]  # type: ignore[index]
    assert list(PREBUILT) == [i for i in IDS if i in PREBUILT]


def test_all_sixteen() -> None:
    assert list(PREBUILT) == IDS


@pytest.mark.parametrize(("scorer_id", "name", "needs_judge", "higher"), CONTRACT, ids=IDS)
def test_each_entry_matches_the_contract_and_its_factory(scorer_id: str, name: str, needs_judge: bool, higher: bool) -> None:
    if scorer_id not in PREBUILT:
        pytest.skip(f"{scorer_id} not built yet")
    entry = PREBUILT[scorer_id]
    factory = getattr(scorers, name)
    assert isinstance(entry, PrebuiltScorer) and entry.factory is factory and name in scorers.__all__
    assert (factory.scorer_id, factory.needs_judge, factory.version, factory.higher_is_better) == (
        scorer_id, needs_judge, "2" if scorer_id == "textual-difference-scorer" else "1", higher)
    assert (entry.id, entry.needs_judge, entry.version, entry.higher_is_better) == (
        factory.scorer_id, factory.needs_judge, factory.version, factory.higher_is_better)
    built = factory({"model": "openai/x"} if needs_judge else None)
    assert (built.id, built.version, built.higher_is_better) == (scorer_id, entry.version, higher)
    assert built.description == entry.description == factory.description and entry.description  # said once
    assert any(step.is_judge for step in built.steps) == needs_judge


def test_custom_scorers_declare_their_direction() -> None:
    assert create_scorer("c", generate_score=lambda ctx: 0.0).higher_is_better is True
    assert create_scorer("c", generate_score=lambda ctx: 0.0, higher_is_better=False).higher_is_better is False
    with pytest.raises(ConfigError, match="`higher_is_better` must be True or False"):
        create_scorer("c", generate_score=lambda ctx: 0.0, higher_is_better="no")  # type: ignore[arg-type]
