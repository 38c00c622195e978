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

__all__ = ("GateVerdict", "gate", "rule_text", "higher_is_better", "direction_label", "direction_note",
           "judge_refusals")


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


def judge_refusals(judges: Mapping[str, Mapping[str, Any]], exact: Mapping[str, Mapping[str, Any] | None],
                   others: Mapping[str, list[Mapping[str, Any]]], min_agreement: float) -> list[str]:
    """The gate's judge rule (``--min-agreement``): one line per judge scorer of the candidate run whose judge
    model and prompt have no calibration (``exact``: the one stored for its scorer version, judge model and
    prompt fingerprint) with kappa's 95% lower bound at or above ``min_agreement``. ``others``: the scorer's
    calibrations under other keys, to say what they were measured on instead."""
    lines = []
    for scorer, key in judges.items():
        judge = f"{scorer} judged by {key.get('judge_model') or 'an unrecorded model'}"
        if key.get("prompt_fingerprint") is None or key.get("judge_model") is None:
            lines.append(f"{judge}: the run recorded no prompt fingerprint (run by an older evalduck): run it again "
                         "to gate it on agreement")
            continue
        found = exact.get(scorer)
        if found is None:
            elsewhere = [f"{o['judge_model']} prompt {o['prompt_fingerprint']} version {o['scorer_version']}"
                         for o in others.get(scorer, [])[:2]]
            on = f"; calibrated only for {', '.join(elsewhere)} (the prompt or model changed since)" if elsewhere else ""
            lines.append(f"{judge} (prompt {key['prompt_fingerprint']}, version {key['scorer_version']}) has no "
                         f"calibration{on}: run `evalduck calibrate LABELS -s {scorer} --judge-model "
                         f"{key['judge_model']}`")
            continue
        low = found.get("kappa_low")
        if low is None or low < min_agreement:
            lines.append(f"{judge}: its calibration's kappa lower bound {_shown(low)} is below --min-agreement "
                         f"{min_agreement:g} (kappa {_shown(found.get('kappa'))} over {found.get('n')} labelled "
                         "cells): use a better judge or prompt, or more labels")
    return lines


def _shown(value: Any) -> str:
    return "none" if value is None else f"{float(value):.3f}"

