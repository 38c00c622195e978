"""Results commands: `runs`, `show`, `compare` (the CI gate) and `sql`. No prefect import here."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import duckdb
import typer
from rich.console import Console
from rich.table import Table

from evalduck.flows.cli import app, db_path, fail
from evalduck.flows.cli.errors import USAGE_ERROR, label, print_error, value_error
from evalduck.flows.report.fit import console_width, fit
from evalduck.flows.report.gate import direction_note, gate, rule_text
from evalduck.flows.report.html import sparkline, trend_by_scorer
from evalduck.flows.report.html.reader import store_records
from evalduck.flows.report.measures import scorer_descriptions
from evalduck.flows.report.summary import measures_table
from evalduck.flows.report.text import literal
from evalduck.flows.store import RunRecord, Store, StoreError

__all__ = ("runs", "show", "compare", "sql")

class _Consoles:
    """Consoles made at first use, so they write to the sys.stdout/stderr of the moment (tests swap them),
    as wide as flows/report/fit.py's `console_width` says."""

    @property
    def out(self) -> Console:
        return Console(soft_wrap=False, width=console_width(sys.stdout))

    @property
    def err(self) -> Console:
        return Console(stderr=True, width=console_width(sys.stderr))


_consoles = _Consoles()

REGRESSION = 1


@contextmanager
def _store(ctx: typer.Context, *, reader: bool = True) -> Iterator[Store]:
    """The store, with store errors (unknown run, locked file, newer schema) turned into exit status 2. A
    file that does not exist is a usage error too: reading must not leave an empty results file behind (a
    mistyped --db made one). A file that cannot be written here is read read-only (`reader`, Store)."""
    path = db_path(ctx)
    if isinstance(path, Path) and not path.expanduser().exists():
        fail(value_error(label(ctx, "db"), path, "no such results file (`evalduck run` creates it; check --db "
                                                 "and EVALDUCK_DB)"), ctx)
    try:
        store = Store(path, reader=reader)
        if store.left_running:
            _consoles.err.print(literal(
                "note: ", store.path, " cannot be written here, so runs whose process is gone still show `running`: ",
                ", ".join(store.left_running), style="dim"))
        yield store
    except StoreError as exc:  # here a usage error of --db, where a run's store error is a failure (exit_code)
        print_error(exc, _consoles.err)
        raise typer.Exit(USAGE_ERROR) from exc


def _num(value: Any, digits: int = 3, signed: bool = False) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return str(value)


def _when(value: datetime | None) -> str:
    return "–" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


@app.command()
def runs(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many runs to list")] = 20,
) -> None:
    """List recent runs, newest first."""
    with _store(ctx) as store:
        records = store.list_runs(limit)
    if not records:
        _consoles.out.print(literal("No runs in ", store.path, "."))
        return
    table = Table(title=literal("Runs in ", store.path, style="table.title"))
    for column in ("run id", "name", "status", "started", "items", "scored", "errors", "dataset"):
        table.add_column(column, justify="right" if column in ("items", "scored", "errors") else "left",
                         overflow="fold" if column == "dataset" else "ellipsis")
    for run in records:
        table.add_row(
            literal(run.run_id), literal(run.name or "–"), run.status, _when(run.started_at),
            str(run.n_items), str(run.n_scores), str(run.n_errors), literal(run.dataset or "–"),
        )
    out = _consoles.out
    out.print(fit(out, table, drop=("dataset", "started", "items")))


@app.command()
def show(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id, run name (its newest run), latest or previous")],
    worst: Annotated[int, typer.Option("--worst", min=0, help="Worst-scored items to list per scorer (the highest for a lower-is-better one)")] = 5,
) -> None:
    """Summarise one run: per-scorer means, errors and skipped cells (with why), then its worst items."""
    with _store(ctx) as store:
        summary = store.run_summary(run)
        worst_items = store.worst_items(summary.run.run_id, worst) if worst else []
        skipped = store.skipped_reasons(summary.run.run_id)
        n_runs, trend = trend_by_scorer(store_records(store), summary.run.run_id)
    r = summary.run
    out = _consoles.out
    out.print(literal((r.run_id, "bold"), "  name=", r.name or "–", f"  status={r.status}  "
                                f"started={_when(r.started_at)}  finished={_when(r.finished_at)}"))
    out.print(literal("dataset=", r.dataset or "–", "  hash=", r.dataset_hash or "–",
                                f"  items={r.n_items}  evalduck=", r.evalduck_version or "–",
                                "  flow run=", r.flow_run_id or "–"))
    table = Table(title="Scorers")
    columns = ("scorer", "version", "judge", "scored", "errors", "skipped", "mean", "stddev", "min", "max", "cost")
    for column in columns:
        table.add_column(column, justify="left" if column in ("scorer", "version", "judge") else "right")
    for s in summary.scorers:
        table.add_row(
            literal(s["scorer_id"], direction_note(s)), literal(s["scorer_version"] or "–"), literal(s["judge_model"] or "–"),
            str(s["n_scored"]), str(s["n_errors"]), str(s["n_skipped"]), _num(s["mean_score"]),
            _num(s["stddev_score"]), _num(s["min_score"]), _num(s["max_score"]), _num(s["cost"], 4),
        )
    out.print(fit(out, table, drop=("version", "judge", "cost", "stddev", "min", "max")))
    if summary.scorers:
        out.print(fit(out, measures_table([(s["scorer_id"], s.get("higher_is_better") is not False)
                                           for s in summary.scorers], scorer_descriptions(r.config))))
    if skipped:
        reasons = Table(title="Skipped cells (not scored: out of the means)")
        for column in ("scorer", "cells", "reason"):
            reasons.add_column(column, overflow="fold", justify="right" if column == "cells" else "left")
        for k in skipped:
            reasons.add_row(literal(k["scorer_id"]), str(k["cells"]), literal((k["reason"] or "")[:300], multiline=True))
        out.print(fit(out, reasons))
    if n_runs > 1:
        notes = {s["scorer_id"]: direction_note(s) for s in summary.scorers}
        out.print(fit(out, _trend_table(r.name, n_runs, trend, notes), drop=("first",)))
    if worst_items:
        items = Table(title=f"Worst items (up to {worst} per scorer; errors first)")
        fields = [_item_fields(w) for w in worst_items]
        for column in ("scorer", "item", "status", "score", "reason / error") + (("item fields",) if any(fields) else ()):
            items.add_column(column, overflow="fold" if column in ("reason / error", "item fields") else "ellipsis")
        for w, shown in zip(worst_items, fields):
            items.add_row(literal(w["scorer_id"], direction_note(w)), literal(w["item_id"]), w["status"], _num(w["score"]),
                          literal((w["detail"] or "")[:200], multiline=True), *((literal(shown),) if any(fields) else ()))
        out.print(fit(out, items, drop=("item fields",)))


def _item_fields(cell: dict[str, Any]) -> str:
    """The RAG and agent fields of a worst item, briefly: what it was scored against."""
    parts = []
    if cell.get("n_passages") is not None:
        parts.append(f"{cell['n_passages']} passage(s)")
    if cell.get("expected_tool_order"):
        parts.append("expects " + " → ".join(cell["expected_tool_order"]))
    elif cell.get("expected_tool"):
        parts.append(f"expects {cell['expected_tool']}")
    return "; ".join(parts)


def _trend_table(name: str | None, n_runs: int, trend: dict[str, list[float | None]], notes: dict[str, str]) -> Table:
    """``notes``: what follows a scorer's id (its direction, when lower is better: a rising line is worse)."""
    table = Table(title=literal(f"Trend: mean over the last {n_runs} runs of ", name or "–", " (oldest first)"))
    for column in ("scorer", "trend", "first", "this run"):
        table.add_column(column, justify="left" if column in ("scorer", "trend") else "right")
    for scorer, means in trend.items():
        table.add_row(literal(scorer, notes.get(scorer, "")), sparkline(means), _num(means[0]), _num(means[-1]))
    return table


_UNFINISHED = {
    "running": "is still running",
    "interrupted": "was interrupted (its process is gone)",
    "failed": "failed",
    "cancelled": "was cancelled",
}


def _refuse_unfinished(side: str, ref: str, run: RunRecord) -> None:
    """Exit 2 with one line when `run` (side A or B, given as `ref`) did not complete."""
    if run.status == "completed":
        return
    named = run.run_id + (f" ({run.name})" if run.name else "") + (f" = {ref}" if ref not in (run.run_id, run.name) else "")
    what = _UNFINISHED.get(run.status, f"is {run.status}")
    _consoles.err.print(
        f"error: run {side} {named} {what}, with {run.n_scores} scored cell(s) over {run.n_items} item(s): not a "
        f"result to compare. Finish it (`evalduck run DATASET --resume {run.run_id}`), pick another run, or pass "
        "--allow-partial to compare what it has.",
        markup=False, highlight=False, soft_wrap=True,
    )
    raise typer.Exit(USAGE_ERROR)


@app.command()
def compare(
    ctx: typer.Context,
    run_a: Annotated[str, typer.Argument(help="Baseline run: id, name, latest or previous")],
    run_b: Annotated[str, typer.Argument(help="Candidate run: id, name, latest or previous")],
    fail_below: Annotated[
        float | None,
        typer.Option(
            "--fail-below", min=0.0,
            help="Exit 1 when some scorer's 95% upper bound on the paired delta (B - A) is below -DELTA (for a "
            "lower-is-better scorer: its 95% lower bound is above +DELTA)",
            metavar="DELTA",
        ),
    ] = None,
    items: Annotated[int, typer.Option("--items", min=0, help="Worst per-item deltas to list per scorer")] = 0,
    allow_partial: Annotated[
        bool,
        typer.Option("--allow-partial", help="Compare runs that are not `completed` too (running, interrupted, "
                     "failed, cancelled): their cells so far"),
    ] = False,
) -> None:
    """Compare run B with run A per scorer: paired mean delta with its 95% interval (CI gate).

    A run that did not complete is refused (exit 2) unless --allow-partial: its cells so far are no result.
    """
    with _store(ctx) as store:
        a, b = store.resolve_run(run_a), store.resolve_run(run_b)
        if not allow_partial:
            for side, ref, run_id in (("A", run_a, a), ("B", run_b, b)):
                _refuse_unfinished(side, ref, store.run_record(run_id))
        rows = store.compare(a, b)
        deltas = {row["scorer_id"]: store.item_deltas(a, b, row["scorer_id"], limit=items) for row in rows} if items else {}
        per_run = store.sql(
            "SELECT run_id, list(DISTINCT scorer_id ORDER BY scorer_id) FROM scores"
            " WHERE run_id IN (?, ?) AND status = 'scored' GROUP BY run_id",
            [a, b],
        ).rows
    verdict = gate(rows, fail_below) if fail_below is not None else None
    out = _consoles.out
    out.print(fit(out, _comparison_table(rows, a, b, verdict.regressed if verdict is not None else []),
                  drop=("errors A/B", "+/-/=", "paired")))
    if not rows:
        _consoles.out.print("No scorer appears in both runs.")
    for scorer, per_item in deltas.items():
        out.print(fit(out, _item_table(scorer, per_item), drop=("status A", "status B")))
    scorers_of = {run_id: set(ids) for run_id, ids in per_run}
    for side, run_id, other in (("A", a, b), ("B", b, a)):
        only = sorted(scorers_of.get(run_id, set()) - scorers_of.get(other, set()))
        if only:
            _consoles.out.print(literal(f"Scored in run {side} only: ", ", ".join(only), " (not compared)"))
    if verdict is None:
        return
    if verdict.ungated:
        _consoles.out.print(literal("Not gated (fewer than 2 items scored in both runs): ", ", ".join(verdict.ungated)))
    if not verdict.regressed:
        _consoles.out.print(f"OK: no scorer's 95% upper bound on the paired delta is below -{fail_below:g} "
                            f"(nor a lower-is-better scorer's 95% lower bound above +{fail_below:g})", highlight=False)
        return
    _consoles.err.print(literal("REGRESSION: ", ", ".join(verdict.regressed), f": {rule_text(fail_below or 0.0)}"))
    raise typer.Exit(REGRESSION)


def _comparison_table(rows: list[dict[str, Any]], a: str, b: str, failing: list[str]) -> Table:
    table = Table(title=literal("B = ", b, "  vs  A = ", a, style="table.title"))
    for column in ("scorer", "mean A", "mean B", "Δ (B-A)", "95% CI", "paired", "+/-/=", "errors A/B"):
        table.add_column(column, justify="left" if column == "scorer" else "right")
    table.add_column("warning", overflow="fold")
    for row in rows:
        ci = f"[{_num(row['ci_low'], signed=True)}, {_num(row['ci_high'], signed=True)}]"
        table.add_row(
            literal(row["scorer_id"], direction_note(row), style="red" if row["scorer_id"] in failing else ""),
            _num(row["mean_a"]),
            _num(row["mean_b"]),
            _num(row["mean_delta"], signed=True), ci, str(row["n_paired"]),
            f"{row['n_improved']}/{row['n_regressed']}/{row['n_unchanged']}", f"{row['n_errors_a']}/{row['n_errors_b']}",
            literal(row["warning"] or "", multiline=True),
        )
    return table


def _item_table(scorer: str, per_item: list[dict[str, Any]]) -> Table:
    detail = Table(title=literal(scorer, ": worst items", style="table.title"))
    for column in ("item", "score A", "score B", "Δ", "status A", "status B"):
        detail.add_column(column)
    for d in per_item:
        detail.add_row(literal(d["item_id"]), _num(d["score_a"]), _num(d["score_b"]), _num(d["delta"], signed=True),
                       d["status_a"] or "–", d["status_b"] or "–")
    return detail


@app.command()
def sql(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="SQL; the file's views and macros are available (docs/sql.md)")],
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", help="A value bound to the next ? or $n (repeatable)")
    ] = None,
    output: Annotated[str, typer.Option("--format", "-f", help="table, csv or json")] = "table",
    write: Annotated[bool, typer.Option("--write", help="Open read-write (default: read-only)")] = False,
) -> None:
    """Run SQL on the results file (read-only unless --write)."""
    if output not in ("table", "csv", "json"):
        fail(f"--format must be one of table, csv or json, got {output!r}", ctx)
    with _store(ctx, reader=not write) as store:
        try:
            result = store.sql(query, list(param) if param else None, write=write)
        except duckdb.Error as exc:
            _consoles.err.print(literal("error: ", str(exc), multiline=True))
            raise typer.Exit(USAGE_ERROR) from exc
    if output == "json":
        sys.stdout.write(json.dumps(result.records(), default=str, ensure_ascii=False) + "\n")
    elif output == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(result.columns)
        writer.writerows(result.rows)
    else:
        _print_table(result.columns, result.rows)


def _print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    table = Table()
    for column in columns:
        table.add_column(literal(column), overflow="fold")
    for row in rows:
        table.add_row(*(literal("NULL" if v is None else _num(v, 4) if isinstance(v, float) else v, multiline=True)
                        for v in row))
    out = _consoles.out
    out.print(fit(out, table))
    out.print(f"{len(rows)} row(s)", highlight=False)
