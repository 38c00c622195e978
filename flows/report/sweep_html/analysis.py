"""The sweep report's arithmetic beyond the leaderboard (flows/report/leaderboard.py): the cost-vs-quality
Pareto front and each axis's marginal effects. Pure functions of figures already summed up."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ("Marginal", "Point", "marginal_effects", "pareto_front", "value_key", "value_text")

_EPS = 1e-12


@dataclass(frozen=True)
class Point:
    """A candidate on the cost-vs-quality plane: its cost and its mean on the chosen scorer."""

    label: str
    cost: float
    quality: float


def pareto_front(points: Sequence[Point], higher_is_better: bool = True) -> list[Point]:
    """The points no other point dominates (costs no more and scores no worse, one of the two strictly), cheapest
    first. Two points of the same cost and quality are both on the front: neither dominates the other."""
    sign = 1.0 if higher_is_better else -1.0
    ordered = sorted(points, key=lambda p: (p.cost, -sign * p.quality, p.label))
    front: list[Point] = []
    best = float("-inf")
    for p in ordered:
        q = sign * p.quality
        if q > best + _EPS:
            front.append(p)
            best = q
        elif front and abs(q - best) <= _EPS and abs(p.cost - front[-1].cost) <= _EPS:
            front.append(p)  # the twin of the last point on the front
    return front


@dataclass(frozen=True)
class Marginal:
    """One value of one axis on one scorer: the mean of the means of the candidates with that value."""

    axis: str
    value: str  # as shown (value_text)
    scorer: str
    mean: float | None
    candidates: int  # how many candidates with that value have a mean on the scorer


def value_key(value: Any) -> str:
    """A value as a comparable key, whatever JSON made of it (the `sweeps` table stores axes and spec as JSON)."""
    return json.dumps(value, sort_keys=True, default=str)


def value_text(value: Any) -> str:
    """A value as the report shows it: a string as written, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def marginal_effects(axes: Mapping[str, Sequence[Any]], values: Mapping[str, Mapping[str, Any]],
                     means: Mapping[tuple[str, str], float | None], scorers: Sequence[str]) -> list[Marginal]:
    """For each axis (in its order), each of its values and each scorer: the mean over the candidates having that
    value of their means (``means``: (candidate, scorer) -> mean; ``values``: candidate -> axis -> value).
    Every candidate weighs the same: a marginal effect is about the axis, not about the items."""
    out = []
    for axis, axis_values in axes.items():
        for value in axis_values:
            key = value_key(value)
            having = [c for c, vs in values.items() if axis in vs and value_key(vs[axis]) == key]
            for scorer in scorers:
                found = [m for c in having if (m := means.get((c, scorer))) is not None]
                out.append(Marginal(axis=axis, value=value_text(value), scorer=scorer,
                                    mean=statistics.fmean(found) if found else None, candidates=len(found)))
    return out
