"""What each scorer of a stored run measures, and which way is better: the one line `evalduck show`, the run's
terminal summary and the HTML report print under its scores (issue 23: a tone score of 1.000 for an empty answer
reads as wrong to whoever does not know that tone is not quality). No prefect import here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalduck.flows.report.gate import direction_label
from evalduck.scorers import PREBUILT

__all__ = ("scorer_descriptions", "measures_line")


def scorer_descriptions(config: Any) -> dict[str, str]:
    """Each scorer id -> its description for a run of this stored config: what the run recorded of each scorer it
    ran (`run_scorers`, custom scorers included), else, for a run recorded before that, the prebuilt
    catalogue's line."""
    described = {sid: p.description for sid, p in PREBUILT.items()}
    ran = config.get("run_scorers") if isinstance(config, Mapping) else None
    for entry in ran if isinstance(ran, list) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), str) and entry.get("description") is not None:
            described[entry["id"]] = str(entry["description"])
    return described


def measures_line(description: str, higher_is_better: bool) -> str:
    """``description; higher is better`` (the direction alone for a scorer that has no description)."""
    direction = direction_label(higher_is_better)
    return f"{description.rstrip('. ')}; {direction}" if description.strip() else direction
