"""`evalduck label RUN -s SCORER`: label a run's cells by hand on a local page (flows/local/label_server.py), each
label stored in the results file's `labels` table at once; `--export FILE` writes them as a labels file that
`evalduck calibrate` reads (and `calibrate --labels-from RUN` reads the table itself)."""

from __future__ import annotations

import getpass
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from evalduck.flows.cli import app, fail
from evalduck.flows.cli.errors import label as option_label
from evalduck.flows.cli.errors import value_error
from evalduck.flows.cli.results import _consoles, _store
from evalduck.flows.report.text import literal
from evalduck.flows.store.labels import cells_to_label, run_labels
from evalduck.flows.store.queries import json_value

__all__ = ("label",)

DEFAULT_SCALE = "0,0.25,0.5,0.75,1"


def _scale(ctx: typer.Context, text: str) -> list[float]:
    try:
        values = sorted({float(v) for v in text.split(",") if v.strip()})
    except ValueError:
        values = []
    if not 2 <= len(values) <= 9:
        fail(value_error(option_label(ctx, "scale"), text, "must be 2 to 9 numbers separated by commas, one per key "
                         "1..9 (e.g. 0,1 for a yes/no verdict)"), ctx)
    return values


@app.command()
def label(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id, run name (its newest run), latest or previous")],
    scorer: Annotated[str, typer.Option("--scorer", "-s", help="The scorer whose cells to label")],
    scale: Annotated[str, typer.Option(help="The labels keys 1..9 give, comma-separated")] = DEFAULT_SCALE,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: a free one)")] = 0,
    labeller: Annotated[Optional[str], typer.Option(help="Who labels [default: your user name]")] = None,
    export: Annotated[Optional[Path], typer.Option(help="Write the run's labels of the scorer to this .jsonl "
                                                   "labels file (with their items) instead of serving the page")] = None,
) -> None:
    """Label RUN's cells of a scorer by hand on a local page (one cell at a time, from the keyboard); each label is
    stored at once. Ctrl-C ends it."""
    values = _scale(ctx, scale)
    with _store(ctx, reader=export is not None) as store:
        run_id = store.resolve_run(run)
        cells = cells_to_label(store, run_id, scorer)
        if not cells:
            fail(f"run {run_id} has no scored {scorer} cell to label (see `evalduck show {run_id}`)", ctx)
        if export is not None:
            _export(export, cells, {r["item_id"]: r for r in run_labels(store, run_id, scorer)})
            return
        from evalduck.flows.local.label_server import LabelServer

        try:
            server = LabelServer(store, run_id, scorer, values, labeller or getpass.getuser(), port)
        except OSError as exc:
            fail(value_error(option_label(ctx, "port"), port, f"cannot be served on 127.0.0.1 ({exc.strerror or exc})"),
                 ctx)
        _consoles.out.print(literal(f"labelling {len(cells)} {scorer} cells of run {run_id}: open ", server.url,
                                    " (Ctrl-C ends it)"), soft_wrap=True)
        sys.stdout.flush()  # the address at once, also into a pipe (a script or a test waiting for it)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            _consoles.out.print("stopped; every label given is stored", highlight=False)
        finally:
            server.server_close()


def _export(path: Path, cells: list[dict[str, object]], labels: dict[str, dict[str, object]]) -> None:
    """The labelled cells as a labels file that carries its items (calibrate needs no --dataset for it)."""
    rows = []
    for cell in cells:
        given = labels.get(str(cell["item_id"]))
        if given is None:
            continue
        rows.append({"id": cell["item_id"], "label": given["value"], "input": json_value(cell["input"]),
                     "output": json_value(cell["output"]), "groundTruth": json_value(cell["ground_truth"]),
                     "metadata": {"labeller": given["labeller"], "labelled_at": str(given["created_at"])}})
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}, ensure_ascii=False) + "\n"
                            for r in rows), encoding="utf-8")
    _consoles.out.print(literal(f"{len(rows)} label(s) written to ", str(path)), soft_wrap=True)
