"""A run's self-contained HTML report (header, per-scorer statistics and histograms, the trend over the last runs
of its name, the comparison with a baseline and its most-moved items, the item table), and the statistics and
directions that the run's artifacts and `evalduck show` share with it.

Importing the package is cheap: the chart renderer and the template engine load when a report is written.
"""

from __future__ import annotations

from evalduck.flows.report.html.direction import direction_label, scorer_directions
from evalduck.flows.report.html.stats import (
    DEFAULT_LAST,
    ScorerStats,
    previous_completed,
    scorer_stats,
    sparkline,
    trend_by_scorer,
    trend_run_ids,
)
from evalduck.flows.report.html.writer import WrittenReport, default_report_path, write_report

__all__ = (
    "DEFAULT_LAST",
    "ScorerStats",
    "WrittenReport",
    "default_report_path",
    "direction_label",
    "previous_completed",
    "scorer_directions",
    "scorer_stats",
    "sparkline",
    "trend_by_scorer",
    "trend_run_ids",
    "write_report",
)
