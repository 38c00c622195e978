"""How a sweep's candidates are named and which one is the baseline (flows/inputs/sweeps.py reads the file):
a label from the values that set a candidate apart, short enough for a table; two candidates never share one;
exactly one baseline, named by label, by axis values or marked in the list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalduck.flows.inputs.yaml_lines import Where

__all__ = ("FILE_PREFIX", "baseline_index", "duplicate_labels", "label_of")

FILE_PREFIX = "file:"  # a target_system_prompt read from a file (relative to the working directory)
_LABEL_WIDTH = 28


def _short(value: Any) -> str:
    text = str(value)
    if text.startswith(FILE_PREFIX):
        text = Path(text.removeprefix(FILE_PREFIX)).name
    text = " ".join(text.split())
    if len(text) <= _LABEL_WIDTH:
        return text
    module, colon, function = text.partition(":")
    if colon and " " not in text and module != "model":  # module:function: its package path goes first
        parts = module.split(".")
        while len(parts) > 1 and len(".".join(parts)) + 1 + len(function) > _LABEL_WIDTH:
            parts.pop(0)
        text = f"{'.'.join(parts)}:{function}"
        if len(text) <= _LABEL_WIDTH:
            return text
    # Prose keeps its start; a name (module:function, provider/model) its end, where variants differ.
    return text[: _LABEL_WIDTH - 3] + "..." if " " in text else "..." + text[3 - _LABEL_WIDTH:]


def label_of(values: Mapping[str, Any]) -> str:
    """A candidate's label from its values, in axis order: ``terse.txt | openai/gpt-4o-mini``."""
    return " | ".join(_short(v) for v in values.values()) or "base"


def duplicate_labels(candidates: Sequence[tuple[str, str]]) -> list[str]:
    """A problem per (label, where) whose label an earlier candidate has."""
    seen: dict[str, str] = {}
    problems = []
    for label, where in candidates:
        if label in seen:
            problems.append(f"{where}: label {label!r} is also that of the candidate at {seen[label]}: give the "
                            f"candidates `label:`s of their own")
        seen.setdefault(label, where)
    return problems


def baseline_index(located: Where, marked: Sequence[int], wanted: str | Mapping[str, Any] | None,
                   candidates: Sequence[tuple[str, Mapping[str, Any]]], problems: list[str]) -> int:
    """The baseline's index among (label, values): ``marked`` `baseline: true` in the list, or named by the
    top-level `baseline:` (``wanted``: a label, or the axis values that pick one candidate); the first candidate
    when neither says."""
    named: list[int] = []
    if wanted is not None:
        named = [i for i, (label, values) in enumerate(candidates)
                 if (label == wanted if isinstance(wanted, str) else all(values.get(k) == v for k, v in wanted.items()))]
        if not named:
            labels = ", ".join(repr(label) for label, _ in candidates)
            problems.append(f"{located.where(['baseline'])}: baseline {wanted!r} is none of the candidates ({labels})")
        elif len(named) > 1:
            problems.append(f"{located.where(['baseline'])}: baseline {wanted!r} picks {len(named)} candidates "
                            f"({', '.join(repr(candidates[i][0]) for i in named)}): name exactly one")
    every = sorted(set(marked) | set(named[:1] if len(named) == 1 else []))
    if len(marked) > 1 or (marked and named and len(every) > 1):
        wheres = [located.where(["candidates", i, "baseline"]) for i in marked]
        if named:
            wheres.append(located.where(["baseline"]))
        problems.append(f"{wheres[0]}: two baselines ({'; '.join(wheres)}): a sweep has one")
    return every[0] if every else 0
