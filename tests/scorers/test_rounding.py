"""Half-up rounding (0.075 -> 0.08, as on paper), where Python's ``round()`` rounds half to even."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalduck.scorers._rounding import round_half_up


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.3 / 4, 0.08), (0.075, 0.08), (0.125, 0.13), (1.3 / 3, 0.43), (0.005, 0.01), (2.675, 2.68), (1.0, 1.0), (0.0, 0.0)],
)
def test_halves_round_up(value: float, expected: float) -> None:
    assert round_half_up(value) == expected


def test_differs_from_builtin_round_on_halves() -> None:
    assert round(0.125, 2) == 0.12  # banker's rounding, which the SPEC rules out
    assert round_half_up(0.125) == 0.13


@given(st.floats(min_value=0, max_value=1000, allow_nan=False))
def test_within_half_a_cent(value: float) -> None:
    assert abs(round_half_up(value) - value) <= 0.005 + 1e-9
