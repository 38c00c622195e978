"""The one regression rule, for `evalduck compare --fail-below` and the scheduled `regression_check`.

A scorer regressed when the 95% interval of its paired delta (candidate minus baseline) lies beyond
``max_drop`` in the worse direction: for a higher-is-better scorer its upper end is below ``-max_drop``,
for a lower-is-better one (hallucination, bias, toxicity: `higher_is_better` false in the comparison row)
its lower end is above ``+max_drop``. Noise alone does not fail a gate. A scorer with no interval (fewer
than 2 items scored in both runs) is *not gated*: one paired item is no evidence either way, so both entry
points pass it and name it, rather than failing a nightly run on a single item's change. No Prefect import:
the CLI uses it without starting Prefect.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ("GateVerdict", "gate", "rule_text", "higher_is_better", "direction_label", "direction_note")


class GateVerdict(BaseModel):
    """Which scorers regressed, and which could not be judged."""

    regressed: list[str]
    ungated: list[str]


def higher_is_better(row: Mapping[str, Any]) -> bool:
    """A comparison row's direction (rows without the column, from before it existed, are higher-is-better)."""
    return row.get("higher_is_better") is not False


def direction_label(higher_is_better: bool) -> str:
    """The one wording of a scorer's direction, for every display."""
    return "higher is better" if higher_is_better else "lower is better"


def direction_note(row: Mapping[str, Any]) -> str:
    """What a display adds after a lower-is-better scorer's id."""
    return "" if higher_is_better(row) else f" ({direction_label(False)})"


def _bound(row: Mapping[str, Any]) -> float | None:
    """The end of the interval nearest to "no change" on the worse side: the upper end, or the lower one for
    a lower-is-better scorer."""
    bound = row.get("ci_high" if higher_is_better(row) else "ci_low")
    return None if bound is None or math.isnan(bound) else float(bound)


def gate(comparison: Iterable[Mapping[str, Any]], max_drop: float) -> GateVerdict:
    """Apply the rule to ``Store.compare`` rows."""
    regressed: list[str] = []
    ungated: list[str] = []
    for row in comparison:
        bound = _bound(row)
        if bound is None:
            ungated.append(str(row["scorer_id"]))
        elif (bound < -max_drop) if higher_is_better(row) else (bound > max_drop):
            regressed.append(str(row["scorer_id"]))
    return GateVerdict(regressed=regressed, ungated=ungated)


def rule_text(max_drop: float) -> str:
    """The rule in words, for the verdicts both entry points print."""
    return (f"the 95% upper bound of the paired delta is below {0.0 - max_drop:+.3f}, or for a lower-is-better "
            f"scorer its 95% lower bound is above {max_drop:+.3f}")
