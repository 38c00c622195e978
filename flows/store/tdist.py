"""Student t quantiles for the 95% interval of a paired mean, computed here because DuckDB has none.

Exact values for df 1..100 are stored in the table `t_quantile_975`; above 100 the SQL uses the
Cornish-Fisher expansion (`t975_large_df` macro), whose error there is below 1e-10.
"""

from __future__ import annotations

import math

__all__ = ("TABLE_MAX_DF", "t_two_sided_cdf", "t_quantile_975", "t_quantile_table")

TABLE_MAX_DF = 100


def t_two_sided_cdf(t: float, df: int) -> float:
    """P(|T| <= t) for integer df, by the closed forms of Abramowitz & Stegun 26.7.3 and 26.7.4."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    term = total = 1.0
    if df % 2 == 1:
        if df == 1:
            return 2 * theta / math.pi
        for k in range(1, (df - 3) // 2 + 1):
            term *= (2 * k) / (2 * k + 1) * cos2
            total += term
        return 2 / math.pi * (theta + sin * math.cos(theta) * total)
    for k in range(1, (df - 2) // 2 + 1):
        term *= (2 * k - 1) / (2 * k) * cos2
        total += term
    return sin * total


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom, by bisection to 1e-12."""
    if df < 1:
        raise ValueError(f"df must be >= 1, got {df!r}")
    low, high = 0.0, 1e4
    while high - low > 1e-12:
        mid = (low + high) / 2
        if t_two_sided_cdf(mid, df) < 0.95:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def t_quantile_table() -> list[tuple[int, float]]:
    """Rows (df, q) for the `t_quantile_975` table."""
    return [(df, t_quantile_975(df)) for df in range(1, TABLE_MAX_DF + 1)]
