"""Rounding that matches what people expect on paper (halves go up), unlike ``round()``."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

__all__ = ("round_half_up",)


def round_half_up(value: float, digits: int = 2) -> float:
    """Round half up to ``digits`` decimals: 0.075 -> 0.08, 0.125 -> 0.13.

    Goes through ``repr`` (the shortest decimal that round-trips), so 0.3/4, stored as 0.07499999...,
    is read as 0.075 and rounds up; ``round()`` would give 0.07.
    """
    quantum = Decimal(1).scaleb(-digits)
    return float(Decimal(repr(float(value))).quantize(quantum, rounding=ROUND_HALF_UP))
