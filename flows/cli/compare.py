"""`evalduck compare A B`: run B against run A per scorer, and the CI gate (`--fail-below`, exit 1 on a
regression); a run that did not complete is refused unless `--allow-partial`. No prefect import here."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from evalduck.flows.cli import app
from evalduck.flows.cli.errors import USAGE_ERROR
from evalduck.flows.cli.results import _consoles, _num, _store
from evalduck.flows.report.fit import fit
from evalduck.flows.report.gate import direction_note, gate, judge_refusals, rule_text
from evalduck.flows.report.judges import changed_judges
from evalduck.flows.report.noise import DELTA_NOISE_SQL, delta_noise_line
from evalduck.flows.report.text import literal
from evalduck.flows.store import RunRecord, Store
from evalduck.flows.store.calibrations import find_calibration, others_for, run_judges

__all__ = ("compare", "REGRESSION")

REGRESSION = 1


_UNFINISHED = {
    "running": "is still running",
    "interrupted": "was interrupted (its process is gone)",
    "failed": "failed",
    "cancelled": "was cancelled",
    "budget_exceeded": "was stopped by its budget (--max-cost)",
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
    min_agreement: Annotated[
        float | None,
        typer.Option("--min-agreement", min=-1.0, max=1.0, metavar="KAPPA",
                     help="Exit 2 when a judge scorer of run B has no calibration (`evalduck calibrate`) for its "
                     "judge model and prompt whose kappa 95% lower bound is at least KAPPA"),
    ] = None,
    allow_partial: Annotated[
        bool,
        typer.Option("--allow-partial", help="Compare runs that are not `completed` too (running, interrupted, "
                     "failed, cancelled, budget_exceeded): their cells so far"),
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
        if min_agreement is not None:
            _refuse_untrusted_judges(store, b, {row["scorer_id"] for row in rows}, min_agreement)
        deltas = {row["scorer_id"]: store.item_deltas(a, b, row["scorer_id"], limit=items) for row in rows} if items else {}
        per_run = store.sql(
            "SELECT run_id, list(DISTINCT scorer_id ORDER BY scorer_id) FROM scores"
            " WHERE run_id IN (?, ?) AND status = 'scored' GROUP BY run_id",
            [a, b],
        ).rows
        noise = store.sql(DELTA_NOISE_SQL, [a, b]).records()
        judges = changed_judges(store, a, b, {row["scorer_id"] for row in rows})
    verdict = gate(rows, fail_below) if fail_below is not None else None
    out = _consoles.out
    for line in judges:
        out.print(literal(line), soft_wrap=True)
    out.print(fit(out, _comparison_table(rows, a, b, verdict.regressed if verdict is not None else []),
                  drop=("errors A/B", "+/-/=", "paired")))
    if not rows:
        _consoles.out.print("No scorer appears in both runs.")
    for row in noise:
        out.print(literal(delta_noise_line(row), style="dim"), soft_wrap=True)
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


def _refuse_untrusted_judges(store: Store, run_b: str, compared: set[str], min_agreement: float) -> None:
    """Exit 2, one line per judge scorer that --min-agreement refuses (flows/report/gate.py ``judge_refusals``)."""
    judges = {k: v for k, v in run_judges(store.run_record(run_b).config).items() if k in compared}
    exact = {scorer: find_calibration(store, key) for scorer, key in judges.items()}
    others = {scorer: others_for(store, scorer) for scorer in judges}
    refusals = judge_refusals(judges, exact, others, min_agreement)
    for line in refusals:
        _consoles.err.print(literal("error: ", line))
    if refusals:
        raise typer.Exit(USAGE_ERROR)


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
