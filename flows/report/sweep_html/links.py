"""Each candidate run's report, linked from the sweep's page: the run report's default path
(flows/report/html/writer.py), written first when it is not there, as a link relative to the sweep's page (the
two open from the folder they are in, offline, and move together)."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

from evalduck.flows.report.html.writer import default_report_path, write_report
from evalduck.flows.report.sweep_html.data import CandidateRun
from evalduck.flows.store import Store

__all__ = ("linked_runs", "relative_href")

logger = logging.getLogger("evalduck.report")


def relative_href(target: Path, page: Path) -> str:
    """``target`` as a URL path relative to the folder of ``page`` (``/`` separated, each part percent-quoted)."""
    rel = os.path.relpath(target.absolute(), page.absolute().parent)
    return quote(Path(rel).as_posix())


def linked_runs(store: Store, runs: Sequence[CandidateRun], page: Path, ui_url: str | None = None) -> list[CandidateRun]:
    """``runs`` with the link to each one's report; a run whose report cannot be written keeps no link (logged:
    `evalduck report RUN` writes it later)."""
    out = []
    for run in runs:
        target = default_report_path(store, run.name, run.run_id)
        if not target.exists():
            try:
                target = write_report(store, run.run_id, path=target, ui_url=ui_url).path
            except Exception as exc:  # noqa: BLE001 - the sweep's page is still worth having without this link
                logger.warning("run %s: could not write its HTML report: %s", run.run_id, exc, exc_info=True)
                out.append(run)
                continue
        out.append(replace(run, href=relative_href(target, page)))
    return out
