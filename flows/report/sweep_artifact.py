"""What a sweep shows in the Prefect UI at its end: a markdown artifact with its leaderboard (the Markdown
`evalduck leaderboard --format markdown` prints: flows/report/leaderboard_text.py) and where its HTML report is
(flows/report/sweep_html/). Called inside the sweep's flow run, after its last run: an artifact is a view of
results the store already holds, so a failure is logged, never raised. Prefect is imported inside the
functions: `evalduck leaderboard` imports the report package and must start fast."""

from __future__ import annotations

import html
import logging
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from uuid import UUID

from evalduck.flows.report.artifacts import artifact_key
from evalduck.flows.report.leaderboard import Row
from evalduck.flows.report.leaderboard_text import to_markdown
from evalduck.flows.report.sweep_board import sweep_rows
from evalduck.flows.report.text import md_code, md_text
from evalduck.flows.store import Store
from evalduck.flows.store.sweeps import resolve_sweep, sweep_runs

__all__ = ("SWEEP_KIND", "publish_sweep_summary", "sweep_summary_markdown", "write_sweep_report_logged")

logger = logging.getLogger("evalduck.artifacts")

SWEEP_KIND = "sweep"  # the artifact's key: evalduck-<sweep name>-sweep (a run's are ...-summary, -progress...)


def _shown(rows: Sequence[Row]) -> list[Row]:
    """Rows whose labels show as typed in the UI's markdown: `<`, `>` and `&` as entities (to_markdown escapes
    `|` and backslashes only), so that a label `<script>` is text, not HTML."""
    return [replace(r, candidate=html.escape(r.candidate, quote=False), scorer=html.escape(r.scorer, quote=False))
            for r in rows]


def sweep_summary_markdown(record: Mapping[str, Any], rows: Sequence[Row], runs: int, report: Path | None = None,
                           db: Path | None = None) -> str:
    """The artifact's text: the sweep (name, id, status, baseline, runs), its report's path and the command that
    writes it again, then the leaderboard's tables. The report is named by its path as text, never a `file://`
    link: a browser refuses those from an http page (as the run's summary: flows/report/artifacts.py)."""
    sweep_id = str(record["sweep_id"])
    candidates = len({r.candidate for r in rows})
    lines = [f"# Sweep {md_text(record['name'])}: every candidate against {md_text(record['baseline'])}", "",
             f"Sweep {md_code(sweep_id)} ({md_text(record['status'])}): {candidates} candidate(s), {runs} run(s). "
             "Deltas are oriented (positive is better) with Holm-adjusted intervals; \"not distinguishable\" is "
             "Holm's p at or above 0.05 (docs/sweeps.md)."]
    where = f"--db {shlex.quote(str(db.resolve()))} " if db is not None else ""
    command = md_code(f"evalduck {where}leaderboard {sweep_id[:8]} --format html")
    if report is not None:
        lines += ["", f"HTML report: {md_code(Path(report).resolve())} (paste the path into the browser's address "
                      f"bar; {command} writes it again)"]
    else:
        lines += ["", f"No HTML report was written: {command} writes it."]
    body = to_markdown(_shown(rows)) if rows else "No scores in this sweep.\n"
    return "\n".join(lines) + "\n\n" + body


def publish_sweep_summary(store: Store, sweep_id: str, report_path: Path | str | None = None) -> UUID | None:
    """Create the sweep's summary artifact (key ``evalduck-<name>-sweep``) in the current flow run; its id, or
    None when there is no flow run here or the artifact could not be made (logged, never raised)."""
    from prefect.artifacts import create_markdown_artifact
    from prefect.context import FlowRunContext, TaskRunContext

    if FlowRunContext.get() is None and TaskRunContext.get() is None:
        logger.warning("sweep %s: no flow run here, so no summary artifact (it belongs to the sweep's flow run)",
                       sweep_id)
        return None
    try:
        record = resolve_sweep(store, sweep_id)
        rows = sweep_rows(store, record["sweep_id"], record["baseline"])
        text = sweep_summary_markdown(record, rows, len(sweep_runs(store, record["sweep_id"])),
                                      Path(report_path) if report_path is not None else None, store.target.path)
        return create_markdown_artifact(markdown=text, key=artifact_key(record["name"], SWEEP_KIND),
                                        description=f"sweep {record['sweep_id']}: leaderboard against its baseline",
                                        _sync=True)
    except Exception:  # noqa: BLE001 - visibility must not fail the sweep
        logger.warning("sweep %s: could not create the summary artifact", sweep_id, exc_info=True)
        return None


def write_sweep_report_logged(store: Store, sweep_id: str) -> Path | None:
    """The sweep's HTML report at its default path, its flow-run links into the Prefect UI this process talks to;
    None when it could not be written (logged, never raised: `evalduck leaderboard --format html` writes it
    later)."""
    from prefect.settings import get_current_settings

    from evalduck.flows.report.sweep_html import write_sweep_report

    try:
        url = get_current_settings().ui_url
        return write_sweep_report(store, sweep_id, ui_url=str(url).rstrip("/") if url else None).path
    except Exception:  # noqa: BLE001
        logger.warning("sweep %s: could not write its HTML report", sweep_id, exc_info=True)
        return None
