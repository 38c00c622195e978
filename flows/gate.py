"""The one regression rule, for `evalduck compare --fail-below` and the scheduled `regression_check`.

A scorer regressed when the upper end of the 95% interval of its paired delta (candidate minus baseline)
lies below ``-max_drop``: noise alone does not fail a gate. A scorer with no interval (fewer than 2 items
scored in both runs) is *not gated*: one paired item is no evidence either way, so both entry points pass
it and name it, rather than failing a nightly run on a single item's change. No Prefect import: the CLI
uses it without starting Prefect.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ("GateVerdict", "gate", "rule_text")


class GateVerdict(BaseModel):
    """Which scorers regressed, and which could not be judged."""

    regressed: list[str]
    ungated: list[str]


def _upper_bound(row: Mapping[str, Any]) -> float | None:
    bound = row.get("ci_high")
    return None if bound is None or math.isnan(bound) else float(bound)


def gate(comparison: Iterable[Mapping[str, Any]], max_drop: float) -> GateVerdict:
    """Apply the rule to ``Store.compare`` rows."""
    regressed: list[str] = []
    ungated: list[str] = []
    for row in comparison:
        bound = _upper_bound(row)
        if bound is None:
            ungated.append(str(row["scorer_id"]))
        elif bound < -max_drop:
            regressed.append(str(row["scorer_id"]))
    return GateVerdict(regressed=regressed, ungated=ungated)


def rule_text(max_drop: float) -> str:
    """The rule in words, for the verdicts both entry points print."""
    return f"the 95% upper bound of the paired delta is below {0.0 - max_drop:+.3f}"
