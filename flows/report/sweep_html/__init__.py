"""A sweep's self-contained HTML report (docs/sweeps.md, 'The sweep report'): its header, the leaderboard per
scorer, a heatmap of every candidate's delta against the baseline, cost against quality with the Pareto front,
each axis's marginal effects, and links to every candidate run's report. It follows the run report's
conventions (flows/report/html/): its template engine, stylesheet and chart drawing, no script in the page.

Importing the package is cheap: the chart renderer and the template engine load when a report is written."""

from __future__ import annotations

from evalduck.flows.report.sweep_html.writer import WrittenSweepReport, default_sweep_report_path, write_sweep_report

__all__ = ("WrittenSweepReport", "default_sweep_report_path", "write_sweep_report")
