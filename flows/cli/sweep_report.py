"""`evalduck leaderboard --format html`: the sweep's report (flows/report/sweep_html/) written, its path printed.
Imported by the command only for that format; no Prefect import here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from evalduck.flows.report.text import literal
from evalduck.flows.store import Store

__all__ = ("write_html",)


def write_html(store: Store, record: dict[str, Any], where: Path | None, by: str | None) -> None:
    """Write the report of the sweep ``record`` (its `sweeps` row) to ``where`` (None: its default path), its
    flow run linked into the Prefect UI when it has one; print where it is, or exit 1 when it cannot be written."""
    from evalduck.flows.cli.report import ui_url
    from evalduck.flows.report.sweep_html import write_sweep_report

    try:
        written = write_sweep_report(store, record, path=where, by=by,
                                     ui_url=ui_url() if record.get("flow_run_id") else None)
    except OSError as exc:  # e.g. reports/ beside a results file on a read-only disk
        Console(stderr=True, soft_wrap=True).print(literal(
            ("error:", "red"), f" could not write the report ({exc.strerror or exc}: ", str(exc.filename or where),
            "). Pass --output FILE in a folder you can write."))
        raise typer.Exit(1) from None
    Console(soft_wrap=True).print(literal(f"report of sweep {record['sweep_id']}: ", written.path,
                                          f" ({written.bytes / 1e6:.2f} MB, {written.seconds:.1f} s)"))
