"""`evalduck calibrate LABELS -s SCORER`: how well a judge scorer agrees with human labels, measured and stored
(the `calibrations` table) for its scorer version, judge model and prompt fingerprint, which `compare
--min-agreement` then requires. The judge's cells come from a new run over the labelled items, or from an
existing run (`--run`). Statistics: flows/report/agreement.py; what they mean: docs/judges.md."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from evalduck.flows.cli import app, fail
from evalduck.flows.cli.errors import label, value_error
from evalduck.flows.cli.results import _consoles, _num, _store
from evalduck.flows.config import MAX_JUDGE_SAMPLES
from evalduck.flows.inputs.labels import Label, Labels, item_key, load_labels
from evalduck.flows.report.agreement import Agreement, agreement
from evalduck.flows.report.fit import fit
from evalduck.flows.report.text import literal
from evalduck.flows.store import Store
from evalduck.flows.store.calibrations import run_judges, save_calibration
from evalduck.flows.store.labels import run_labels
from evalduck.flows.store.queries import json_value

__all__ = ("calibrate",)

_CELLS = """
SELECT s.item_id, s.score, i.input, i.output FROM scores AS s
LEFT JOIN items AS i ON i.run_id = s.run_id AND i.item_id = s.item_id
WHERE s.run_id = ? AND s.scorer_id = ? AND s.status = 'scored'
"""


@app.command()
def calibrate(
    ctx: typer.Context,
    scorer: Annotated[str, typer.Option("--scorer", "-s", help="The judge scorer whose agreement to measure")],
    labels_file: Annotated[Optional[Path], typer.Argument(
        metavar="[LABELS]", help="Labels file (.jsonl, .json, .csv, .parquet): `id` (or `input` and `output`) and "
        "`label` per row", show_default=False)] = None,
    run: Annotated[Optional[str], typer.Option(help="Read this run's cells for the labelled items instead of "
                                               "judging them anew")] = None,
    labels_from: Annotated[Optional[str], typer.Option(help="The labels given to this run's cells with `evalduck "
                                                       "label` (instead of LABELS); its cells are the judge's")] = None,
    dataset: Annotated[Optional[Path], typer.Option(help="The items the labels name by id, when the labels file "
                                                    "does not carry them (its rows' input, output...)")] = None,
    category: Annotated[Optional[list[str]], typer.Option(
        "--category", help="A category label's score, NAME=SCORE (repeatable; e.g. --category yes=1 --category no=0): "
        "category labels are compared as these scores")] = None,
    judge_model: Annotated[Optional[str], typer.Option(help="litellm model for the judge [default: "
                                                       "EVALDUCK_JUDGE_MODEL]")] = None,
    judge_api_base: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server for the judge")] = None,
    judge_samples: Annotated[int, typer.Option(min=1, max=MAX_JUDGE_SAMPLES, help="Times each cell is judged "
                                               "(the cell's mean is compared with the label)")] = 1,
) -> None:
    """Measure a judge scorer's agreement with human LABELS (kappa, alpha, rho, MAE, bias, each with its 95%
    interval) and store it for the judge model and prompt it was measured on."""
    if (labels_file is None) == (labels_from is None):
        fail("give a labels file (LABELS) or --labels-from RUN, one of the two", ctx)
    if labels_from is not None:
        labels, run = _stored_labels(ctx, labels_from, scorer), run or labels_from
        labels_file = Path(labels.path)
    else:
        labels = load_labels(labels_file)  # type: ignore[arg-type]
    labels = labels.scored(_categories(ctx, category or []))
    if run is None:
        run = _judge(ctx, labels, scorer, dataset, judge_model, judge_api_base, judge_samples)
    with _store(ctx) as store:
        run_id = store.resolve_run(run)
        key = run_judges(store.run_record(run_id).config).get(scorer)
        if key is None or key["prompt_fingerprint"] is None:
            fail(f"run {run_id} has no judge scorer {scorer!r} with a recorded prompt fingerprint (a run of this "
                 "evalduck records one per judge scorer): calibrate without --run to judge the labelled items anew",
                 ctx)
        judge, human, missing = _pairs(store, run_id, scorer, labels)
    if not judge:
        fail(f"no labelled item of {labels_file} has a scored {scorer} cell in run {run_id}: label the run's items "
             "(by `id`, or `input` and `output`)", ctx)
    stats = agreement(judge, human)
    with _store(ctx, reader=False) as store:
        save_calibration(store, key, stats.model_dump(), labels=str(labels_file), run_id=run_id)  # type: ignore[arg-type]
    _print(stats, key, run_id, missing)  # type: ignore[arg-type]


def _categories(ctx: typer.Context, given: list[str]) -> dict[str, float]:
    """``--category NAME=SCORE`` options as a table; a usage error for one that is not NAME=number."""
    table = {}
    for text in given:
        name, _, score = text.partition("=")
        try:
            table[name.strip()] = float(score)
        except ValueError:
            fail(value_error(label(ctx, "category"), text, "must be NAME=SCORE with a number (e.g. yes=1)"), ctx)
        if not name.strip():
            fail(value_error(label(ctx, "category"), text, "must name the category before = (e.g. yes=1)"), ctx)
    return table


def _stored_labels(ctx: typer.Context, run: str, scorer: str) -> Labels:
    """The labels given to a run's cells of ``scorer`` on the labelling page (`evalduck label`)."""
    with _store(ctx) as store:
        run_id = store.resolve_run(run)
        given = run_labels(store, run_id, scorer)
    if not given:
        fail(f"run {run_id} has no labels of {scorer} cells: give them with `evalduck label {run_id} -s {scorer}`", ctx)
    return Labels(path=f"labels of run {run_id}", dataset=None, labels=tuple(
        Label(where=f"label of item {g['item_id']}", value=float(g["value"]), item_id=g["item_id"], key=None)
        for g in given))


def _judge(ctx: typer.Context, labels: Labels, scorer: str, dataset: Path | None, judge_model: str | None,
           judge_api_base: str | None, judge_samples: int) -> str:
    """A run of ``scorer`` over the labelled items (the labels file's own, else ``--dataset``'s); its id."""
    from evalduck.flows.cli import db_path
    from evalduck.flows.eval_flow import run_evals
    from evalduck.flows.inputs.datasets import load_dataset

    items = labels.dataset if dataset is None else load_dataset(dataset)
    if items is None:
        fail(value_error(label(ctx, "labels_file"), Path(labels.path), "names its items by id only: give the "
                         "dataset they are in with --dataset, or a run that scored them with --run"), ctx)
    wanted = {lab.item_id for lab in labels.labels} | {lab.key for lab in labels.labels}
    rows = [{"id": r.pop("item_id"), **{k: v for k, v in r.items() if v is not None}}
            for r in (item.store_record() for item in items.items
                      if item.item_id in wanted or item_key(item.input, item.output) in wanted)]
    result = run_evals(rows, scorers=[scorer], judge_model=judge_model,
                       judge_api_base=judge_api_base, judge_samples=judge_samples, name=f"calibrate-{scorer}",
                       db=str(db_path(ctx)), report=False, quiet=True)
    return result.run_id


def _pairs(store: Store, run_id: str, scorer: str, labels: Labels) -> tuple[list[float], list[float], int]:
    """(judge scores, human labels) of the labelled cells the run scored, and how many labels found none."""
    by_id: dict[str, float] = {}
    by_key: dict[str, float] = {}
    for item_id, score, input_, output in store.sql(_CELLS, [run_id, scorer]).rows:
        by_id[item_id] = score
        by_key[item_key(json_value(input_), json_value(output))] = score
    judge, human = [], []
    for lab in labels.labels:
        found = by_id.get(lab.item_id) if lab.item_id is not None else by_key.get(lab.key or "")
        if found is not None:
            judge.append(float(found))
            human.append(float(lab.value))
    return judge, human, len(labels.labels) - len(judge)



def _print(stats: Agreement, key: dict[str, str], run_id: str, missing: int) -> None:
    out = _consoles.out
    out.print(literal("calibration of ", key["scorer_id"], " (version ", key["scorer_version"], ") judged by ",
                      key["judge_model"], ", prompt ", key["prompt_fingerprint"], f": {stats.n} labelled cells of run ",
                      run_id), soft_wrap=True)
    table = Table(title="Agreement with the human labels (95% bootstrap intervals)", title_justify="left")
    for column in ("statistic", "value", "95% CI", "reads as"):
        table.add_column(column, justify="right" if column in ("value", "95% CI") else "left")
    meaning = {"kappa": "Cohen's kappa, quadratic-weighted (1 agrees, 0 chance, < 0 worse than chance)",
               "alpha": "Krippendorff's alpha, interval", "spearman": "Spearman's rho (same order of items)",
               "mae": "mean absolute error", "bias": "mean of judge - human (> 0: the judge scores higher)"}
    for name, reads in meaning.items():
        value, ci = getattr(stats, name), getattr(stats, f"{name}_ci")
        signed = name == "bias"
        table.add_row(name, _num(value, signed=signed),
                      f"[{_num(ci[0], signed=signed)}, {_num(ci[1], signed=signed)}]" if ci else "–", reads)
    out.print(fit(out, table))
    grid = [f"{g:g}" for g in stats.grid]
    confusion = Table(title="Confusion (rows: human label, columns: judge score snapped to the labels' grid)",
                      title_justify="left")
    confusion.add_column("human \\ judge")
    for g in grid:
        confusion.add_column(g, justify="right")
    for g, row in zip(grid, stats.confusion, strict=True):
        confusion.add_row(g, *map(str, row))
    out.print(fit(out, confusion))
    if missing:
        _consoles.err.print(literal(f"{missing} label(s) matched no scored cell of run ", run_id, " (not counted)",
                                    style="yellow"))
    out.print(literal("stored in the calibrations table; `evalduck compare A B --min-agreement 0.6` requires it",
                      style="dim"), soft_wrap=True)
