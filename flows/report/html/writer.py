"""`write_report`: a run's HTML report to a file, by default `reports/<name>-<run id>.html` beside the DuckDB file
(for the shared store, in the working directory)."""

from __future__ import annotations

import os
import re
import secrets
import time
from pathlib import Path

from pydantic import BaseModel

from evalduck.flows.report.html.stats import DEFAULT_LAST
from evalduck.flows.store import Store

__all__ = ("WrittenReport", "default_report_path", "write_report", "write_whole")


class WrittenReport(BaseModel):
    """Where a report was written, its size in bytes and how long writing it took, in seconds."""

    path: Path
    bytes: int
    seconds: float
    run_id: str


def default_report_path(store: Store, name: str | None, run_id: str) -> Path:
    """``reports/<name>-<run id>.html`` in the folder of the DuckDB file, or for the shared store (no file; its
    Parquet folder is DuckLake's own) in the working directory; the name's characters other than letters,
    digits, ``.``, ``_`` and ``-`` become ``-`` (a run without a name is ``unnamed``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name or "").strip("-.") or "unnamed"
    folder = store.target.path.parent if store.target.path is not None else Path.cwd()
    return folder / "reports" / f"{slug[:80]}-{run_id}.html"


def write_whole(target: Path, content: bytes) -> None:
    """``content`` to ``target`` through a temporary file beside it: the file appears whole or not at all."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask decides, as for any file
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_report(
    store: Store, run: str, *, against: str | None = None, compare_previous: bool = True, last: int = DEFAULT_LAST,
    path: Path | None = None, ui_url: str | None = None,
) -> WrittenReport:
    """Gather, render and write the report of ``run`` (any reference); the file appears whole or not at all."""
    from evalduck.flows.report.html.data import gather
    from evalduck.flows.report.html.render import render_html

    started = time.perf_counter()
    data = gather(store, run, against=against, compare_previous=compare_previous, last=last, ui_url=ui_url)
    run_id = data.header.run.run_id
    target = path if path is not None else default_report_path(store, data.header.run.name, run_id)
    html = render_html(data).encode("utf-8")
    write_whole(target, html)
    return WrittenReport(path=target, bytes=len(html), seconds=time.perf_counter() - started, run_id=run_id)
