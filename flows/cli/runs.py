"""`evalduck runs` (the recent runs) and `evalduck show RUN` (one run's summary, trend and worst items).

One module for the two commands that read runs one at a time; no prefect import here.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from evalduck.flows.cli import app
from evalduck.flows.cli.results import _consoles, _num, _store, _when
from evalduck.flows.report.agreement import HumanScaleMean, human_scale_mean
from evalduck.flows.report.fit import fit
from evalduck.flows.report.gate import direction_note
from evalduck.flows.report.html import sparkline, trend_by_scorer
from evalduck.flows.report.html.reader import store_records
from evalduck.flows.report.measures import scorer_descriptions
from evalduck.flows.report.noise import noise_by_scorer, noise_fields, noise_table
from evalduck.flows.report.summary import measures_table
from evalduck.flows.report.text import literal

__all__ = ("runs", "show")


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
        scored = dict(store.sql("SELECT scorer_id, list(score) FROM scores WHERE run_id = ? AND status = 'scored' "
                                "GROUP BY scorer_id", [summary.run.run_id]).rows) if summary.labelled else {}
    r = summary.run
    out = _consoles.out
    out.print(literal((r.run_id, "bold"), "  name=", r.name or "–", f"  status={r.status}  "
                                f"started={_when(r.started_at)}  finished={_when(r.finished_at)}"))
    out.print(literal("dataset=", r.dataset or "–", "  hash=", r.dataset_hash or "–",
                                f"  items={r.n_items}  evalduck=", r.evalduck_version or "–",
                                "  flow run=", r.flow_run_id or "–"))
    if isinstance(r.config, dict) and r.config.get("max_cost") is not None:  # issue 28: the spend against it
        out.print(f"spend=${sum(s['cost'] or 0 for s in summary.scorers):.4f}  budget=${r.config['max_cost']:.4f}")
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
    noise = noise_table({k: noise_fields(v) for k, v in noise_by_scorer(summary.samples).items()})
    if noise is not None:
        out.print(fit(out, noise))
    human = _human_scale_table({k: human_scale_mean(scored.get(k, []), v) for k, v in summary.labelled.items()})
    if human is not None:
        out.print(fit(out, human))
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
        for w, shown in zip(worst_items, fields, strict=True):
            items.add_row(literal(w["scorer_id"], direction_note(w)), literal(w["item_id"]), w["status"], _num(w["score"]),
                          literal((w["detail"] or "")[:200], multiline=True), *((literal(shown),) if any(fields) else ()))
        out.print(fit(out, items, drop=("item fields",)))


def _human_scale_table(estimates: dict[str, HumanScaleMean | None]) -> Table | None:
    """Per scorer with labelled cells, the run's mean on the labels' scale beside the judge's."""
    shown = {k: e for k, e in estimates.items() if e is not None}
    if not shown:
        return None
    table = Table(title="On the human labels' scale (prediction-powered: the judge's mean corrected by its error on "
                        "the labelled cells)", title_justify="left")
    for column in ("scorer", "judge's mean", "human-scale mean", "95% CI", "labelled / cells"):
        table.add_column(column, justify="left" if column == "scorer" else "right")
    for scorer, e in shown.items():
        table.add_row(literal(scorer), _num(e.judge_mean), _num(e.mean), f"[{_num(e.ci[0])}, {_num(e.ci[1])}]",
                      f"{e.n_labelled} / {e.n_cells}")
    return table


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
