"""`write_sweep_report`: a sweep's HTML report to a file, by default `reports/sweep-<name>-<id8>.html` beside the
DuckDB file (for the shared store, in the working directory), as the run report's default path is; each
candidate run's report is written too where it is missing, so that the page's links lead somewhere."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel

from evalduck.flows.report.html.writer import write_whole
from evalduck.flows.store import Store

__all__ = ("WrittenSweepReport", "default_sweep_report_path", "write_sweep_report")


class WrittenSweepReport(BaseModel):
    """Where a sweep's report was written, its size in bytes, how long writing it took (seconds, the run
    reports it wrote included), and which run reports it links."""

    path: Path
    bytes: int
    seconds: float
    sweep_id: str
    run_reports: list[Path] = []


def default_sweep_report_path(store: Store, name: str | None, sweep_id: str) -> Path:
    """``reports/sweep-<name>-<first 8 characters of the id>.html`` in the folder of the DuckDB file (the shared
    store: the working directory); the name's characters other than letters, digits, ``.``, ``_`` and ``-``
    become ``-``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name or "").strip("-.") or "unnamed"
    folder = store.target.path.parent if store.target.path is not None else Path.cwd()
    return folder / "reports" / f"sweep-{slug[:80]}-{sweep_id[:8]}.html"


def write_sweep_report(store: Store, sweep: str | Mapping[str, Any], *, path: Path | None = None,
                       ui_url: str | None = None, by: str | None = None) -> WrittenSweepReport:
    """Gather, render and write the report of ``sweep`` (an id, id prefix, name or `latest`, or its `sweeps`
    row), ranked by the scorer ``by`` first; ``ui_url`` is the Prefect UI its flow-run links point into.

    Raises:
        UnknownSweepError: no sweep matches the reference.
        ValueError: ``by`` names no scorer of the sweep.
        OSError: the file cannot be written.
    """
    from dataclasses import replace

    from evalduck.flows.report.sweep_html.data import gather_sweep
    from evalduck.flows.report.sweep_html.links import linked_runs
    from evalduck.flows.report.sweep_html.render import render_sweep_html

    started = time.perf_counter()
    data = gather_sweep(store, sweep, by=by, ui_url=ui_url)
    target = path if path is not None else default_sweep_report_path(store, data.header.name, data.header.sweep_id)
    runs = linked_runs(store, data.runs, target, ui_url)
    html = render_sweep_html(replace(data, runs=runs)).encode("utf-8")
    write_whole(target, html)
    linked = [(target.parent / unquote(r.href)).resolve() for r in runs if r.href is not None]
    return WrittenSweepReport(path=target, bytes=len(html), seconds=time.perf_counter() - started,
                              sweep_id=data.header.sweep_id, run_reports=linked)
