"""The examples we publish (docstrings and the README's Scorers section) run as written."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

MODULES = [
    "scorers",
    "evalduck.scorers._scorer",
    "evalduck.scorers._load",
    "evalduck.scorers.judge",
    "evalduck.scorers.prebuilt.answer_relevancy",
    "evalduck.scorers.prebuilt.tone",
    "evalduck.scorers.prebuilt.textual_difference",
    "evalduck.scorers.prebuilt.completeness",
    "evalduck.scorers.prebuilt.content_similarity",
    "evalduck.scorers.prebuilt.keyword_coverage",
    "evalduck.scorers.prebuilt.tool_call_accuracy_code",
    "evalduck.scorers.prebuilt.faithfulness",
    "evalduck.scorers.prebuilt.hallucination",
    "evalduck.scorers.prebuilt.answer_similarity",
    "evalduck.scorers.prebuilt.context_precision",
    "evalduck.scorers.prebuilt.context_relevance",
    "evalduck.scorers.prebuilt.bias",
    "evalduck.scorers.prebuilt.toxicity",
    "evalduck.scorers.prebuilt.prompt_alignment",
    "evalduck.scorers.prebuilt.tool_call_accuracy_llm",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), verbose=False)
    assert result.failed == 0


def test_readme_scorer_examples() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("## Scorers", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) >= 2
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["result"].score == 1.0  # type: ignore[attr-defined]
    assert [s.name for s in namespace["scorer"].steps] == ["analyze", "generate_score"]  # type: ignore[attr-defined]
