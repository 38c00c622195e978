"""The examples we publish (docstrings and the README's Scorers section) run as written."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

MODULES = [
    "scorers",
    "scorers._scorer",
    "scorers._load",
    "scorers.judge",
    "scorers.prebuilt.answer_relevancy",
    "scorers.prebuilt.tone",
    "scorers.prebuilt.textual_difference",
    "scorers.prebuilt.completeness",
    "scorers.prebuilt.content_similarity",
    "scorers.prebuilt.keyword_coverage",
    "scorers.prebuilt.tool_call_accuracy_code",
    "scorers.prebuilt.faithfulness",
    "scorers.prebuilt.hallucination",
    "scorers.prebuilt.answer_similarity",
    "scorers.prebuilt.context_precision",
    "scorers.prebuilt.context_relevance",
    "scorers.prebuilt.bias",
    "scorers.prebuilt.toxicity",
    "scorers.prebuilt.prompt_alignment",
    "scorers.prebuilt.tool_call_accuracy_llm",
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
