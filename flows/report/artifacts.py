"""What a run shows in the Prefect UI: a progress artifact updated as items finish, a summary table at the
end, and a comparison with the previous run of the same name (means, paired deltas, 95% intervals).

Artifact calls are API calls: progress is updated every N items, never per item, and a failing artifact
call is logged, never allowed to fail the run."""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect.artifacts import (
    acreate_markdown_artifact,
    acreate_progress_artifact,
    acreate_table_artifact,
    aupdate_progress_artifact,
)

from evalduck.flows.report.gate import direction_note
from evalduck.flows.report.noise import JudgeNoise, noise_fields
from evalduck.flows.report.text import md_code, md_text

__all__ = ("artifact_key", "ProgressArtifact", "summary_rows", "summary_table", "summary_description",
           "publish_summary", "publish_comparison", "comparison_markdown")

logger = logging.getLogger("evalduck.artifacts")


def artifact_key(name: str | None, kind: str) -> str:
    """Prefect keys are lowercase letters, digits and dashes: ``evalduck-<name>-<kind>``."""
    slug = re.sub(r"[^a-z0-9]+", "-", (name or "unnamed").lower()).strip("-") or "unnamed"
    return f"evalduck-{slug}-{kind}"[:100]


class ProgressArtifact:
    """Percent of items done, updated every ``every`` items but at most once a ``min_interval_s`` (and at the end)."""

    def __init__(self, key: str, every: int, min_interval_s: float = 1.0) -> None:
        self.key, self.every, self.min_interval_s = key, max(1, every), min_interval_s
        self.id: UUID | None = None
        self._pending: set[asyncio.Task[Any]] = set()
        self._last = 0.0

    async def start(self, description: str) -> None:
        try:
            self.id = await acreate_progress_artifact(progress=0.0, key=self.key, description=description)
        except Exception:  # noqa: BLE001 - visibility must not fail the run
            logger.warning("could not create the progress artifact", exc_info=True)

    def update(self, done: int, total: int) -> None:
        if self.id is None or total <= 0 or (done % self.every and done != total):
            return
        now = time.monotonic()
        if done != total and now - self._last < self.min_interval_s:
            return  # fast code-only runs would otherwise spend their time in API calls
        self._last = now
        task = asyncio.ensure_future(self._update(100.0 * done / total))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _update(self, percent: float) -> None:
        try:
            assert self.id is not None
            await aupdate_progress_artifact(artifact_id=self.id, progress=percent)
        except Exception:  # noqa: BLE001
            logger.warning("could not update the progress artifact", exc_info=True)

    async def drain(self) -> None:
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)


def _num(value: Any) -> float | None:
    return None if value is None else float(value)


def summary_rows(per_scorer: Sequence[Mapping[str, Any]],
                 noise: Mapping[str, JudgeNoise] | None = None) -> list[dict[str, Any]]:
    """One row per scorer: its direction, mean over scored cells, counts (skipped cells apart: not scorable or
    no judge), judge tokens and cost (spent by this run), and with repeated judging the judge's noise
    (flows/report/noise.py; every row has those keys then, a table's columns being the same for each).
    Exact values: they are ``EvalResult``'s data; rounding belongs to what shows them as text
    (``summary_table``, the CLI's table)."""
    blank = dict.fromkeys(noise_fields(next(iter(noise.values()))), None) if noise else {}
    rows = []
    for s in per_scorer:
        tokens = (s.get("prompt_tokens") or 0) + (s.get("completion_tokens") or 0)
        rows.append({
            "scorer": s["scorer_id"],
            "higher_is_better": s.get("higher_is_better") is not False,
            "mean": _num(s.get("mean_score")),
            "scored": int(s.get("n_scored") or 0),
            "errored": int(s.get("n_errors") or 0),
            "skipped": int(s.get("n_skipped") or 0),
            "judge_tokens": int(tokens),
            "judge_cost_usd": _num(s.get("cost")),
            **blank, **noise_fields((noise or {}).get(s["scorer_id"])),
        })
    return rows


def summary_table(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``summary_rows`` as the UI's summary table shows them: the mean to 3 decimals, the cost to 6 (a table
    artifact is text for people; the exact values are in the run's ``EvalResult`` and in DuckDB)."""
    def shown(value: Any, digits: int) -> float | None:
        return None if value is None else round(float(value), digits)

    return [{**r, "mean": shown(r["mean"], 3), "judge_cost_usd": shown(r["judge_cost_usd"], 6),
             **{k: _shown_noise(v) for k, v in r.items() if k.startswith("judge_") and k not in _USAGE}} for r in rows]


_USAGE = ("judge_tokens", "judge_cost_usd")


def _shown_noise(value: Any) -> Any:
    """A noise figure to 3 decimals, its interval as text ("0.120–0.310")."""
    if isinstance(value, (tuple, list)):
        return f"{value[0]:.3f}–{value[1]:.3f}"
    return None if value is None else round(float(value), 3)


def summary_description(run_id: str, n_items: int, report: Path | None, trend_uri: str | None, name: str | None,
                        db: Path | None = None) -> str:
    """The summary table's description (markdown in the UI): the run, where its HTML report is, and the trend
    chart of the last runs of its name (the Prefect UI draws a data: URI image: docs/architecture.md).

    The report is named by its path as text and the command that opens it, never a `file://` link: a browser
    refuses those from an http page ("Not allowed to load local resource")."""
    lines = [f"evalduck run {md_code(run_id)} ({n_items} items)."]
    if report is not None:
        where = f"--db {shlex.quote(str(db.resolve()))} " if db is not None else ""
        lines[0] += (f" HTML report: {md_code(report.resolve())} (paste the path into the browser's address bar, or "
                     f"run {md_code(f'evalduck {where}report {shlex.quote(run_id)} --open')})")
    if trend_uri is not None:
        lines += ["", f"Mean per scorer over the last runs of {md_text(name or 'this name')}:", "",
                  f"![trend of each scorer's mean over the last runs]({trend_uri})"]
    return "\n".join(lines)


async def publish_summary(key: str, rows: list[dict[str, Any]], description: str) -> None:
    """The run's summary as a table artifact in Prefect; a failure is logged, never raised: an artifact is a
    view of results the store already holds."""
    try:
        await acreate_table_artifact(table=rows, key=key, description=description)
    except Exception:  # noqa: BLE001
        logger.warning("could not create the summary artifact", exc_info=True)


def _fmt(value: Any, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{float(value):+.3f}" if signed else f"{float(value):.3f}"


def comparison_markdown(rows: Sequence[Mapping[str, Any]], run_a: str, run_b: str, name: str | None) -> str:
    """Markdown table of ``compare_runs(previous, this)``: means, mean paired delta and its 95% CI. Names,
    ids and notes are shown as typed (a `|`, a newline or markup in them is text, not markdown)."""
    lines = [
        f"# {md_text(name or 'eval')}: this run vs the previous one",
        "",
        f"Previous run {md_code(run_a)}, this run {md_code(run_b)}. Delta = this − previous, paired per item; "
        "the interval is the 95% confidence interval of the mean paired delta. For a scorer marked "
        "\"lower is better\", a rise is the regression.",
        "",
        "| scorer | previous mean | this mean | delta | 95% CI | paired | improved | regressed | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ci = f"[{_fmt(r.get('ci_low'), True)}, {_fmt(r.get('ci_high'), True)}]"
        warning = r.get("warning") or r.get("warnings") or ""
        lines.append(
            f"| {md_text(str(r.get('scorer_id')) + direction_note(r))} | {_fmt(r.get('mean_a'))} | {_fmt(r.get('mean_b'))} | "
            f"{_fmt(r.get('mean_delta'), True)} | {ci} | {r.get('n_paired', 0)} | {r.get('n_improved', 0)} | "
            f"{r.get('n_regressed', 0)} | {md_text(warning)} |"
        )
    if not rows:
        lines.append("| (no scorer scored in both runs) | | | | | | | | |")
    return "\n".join(lines) + "\n"


async def publish_comparison(key: str, markdown: str, description: str) -> None:
    """The comparison as a markdown artifact; a failure is logged, never raised, as for the summary."""
    try:
        await acreate_markdown_artifact(markdown=markdown, key=key, description=description)
    except Exception:  # noqa: BLE001
        logger.warning("could not create the comparison artifact", exc_info=True)
