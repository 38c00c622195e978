"""``PREBUILT``: every prebuilt scorer by id, in SCORERS.md 0.6's order (the seeds, then its table).

The one list of them: the flows' registry, the config's and the CLI's scorer ids, docs/scorers.md's
tables and the names ``scorers`` and ``evalduck.scorers.prebuilt`` export are all read from it. A new prebuilt
factory (declared with ``@prebuilt``) is imported and added to ``FACTORIES`` below, in its place in that
order.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from evalduck.scorers.prebuilt._declare import PrebuiltScorer
from evalduck.scorers.prebuilt.answer_relevancy import create_answer_relevancy_scorer
from evalduck.scorers.prebuilt.answer_similarity import create_answer_similarity_scorer
from evalduck.scorers.prebuilt.bias import create_bias_scorer
from evalduck.scorers.prebuilt.completeness import create_completeness_scorer
from evalduck.scorers.prebuilt.content_similarity import create_content_similarity_scorer
from evalduck.scorers.prebuilt.context_precision import create_context_precision_scorer
from evalduck.scorers.prebuilt.context_relevance import create_context_relevance_scorer
from evalduck.scorers.prebuilt.faithfulness import create_faithfulness_scorer
from evalduck.scorers.prebuilt.hallucination import create_hallucination_scorer
from evalduck.scorers.prebuilt.keyword_coverage import create_keyword_coverage_scorer
from evalduck.scorers.prebuilt.prompt_alignment import create_prompt_alignment_scorer
from evalduck.scorers.prebuilt.textual_difference import create_textual_difference_scorer
from evalduck.scorers.prebuilt.tone import create_tone_scorer
from evalduck.scorers.prebuilt.tool_call_accuracy_code import create_tool_call_accuracy_scorer_code
from evalduck.scorers.prebuilt.tool_call_accuracy_llm import create_tool_call_accuracy_scorer_llm
from evalduck.scorers.prebuilt.toxicity import create_toxicity_scorer

FACTORIES = (
    # the seeds (SPEC 3)
    create_answer_relevancy_scorer,
    create_tone_scorer,
    create_textual_difference_scorer,
    # judge scorers (SCORERS.md 1)
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_answer_similarity_scorer,
    create_context_precision_scorer,
    create_context_relevance_scorer,
    create_bias_scorer,
    create_toxicity_scorer,
    create_prompt_alignment_scorer,
    create_tool_call_accuracy_scorer_llm,
    # code scorers (SCORERS.md 2)
    create_completeness_scorer,
    create_content_similarity_scorer,
    create_keyword_coverage_scorer,
    create_tool_call_accuracy_scorer_code,
)

PREBUILT: Mapping[str, PrebuiltScorer] = MappingProxyType({p.id: p for p in map(PrebuiltScorer.of, FACTORIES)})

# after FACTORIES, since the factories' names come from it: what `from evalduck.scorers.prebuilt._catalog import *` gives
__all__ = ("FACTORIES", "PREBUILT", *(factory.__name__ for factory in FACTORIES))
