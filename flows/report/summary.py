"""The summary `evalduck run` prints after a run, and `run_evals` too (flows/run/console.py): one module, so
that the Python API prints the same table without importing the command.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table

from evalduck.flows.prefect_settings import ui_url_for
from evalduck.flows.report.fit import fit
from evalduck.flows.report.gate import direction_note
from evalduck.flows.report.measures import measures_line
from evalduck.flows.report.noise import noise_table
from evalduck.flows.report.text import literal, shell_word

__all__ = ("print_result", "summary_table")


def summary_table(result: Any, console: Console) -> RenderableType:
    """The run's summary as wide as ``console``: counts and costs give way first, never a scorer id."""
    named = (" (", result.name, ")") if result.name else ()
    table = Table(title=literal("run ", result.run_id, *named, style="table.title"), title_justify="left")
    columns = ["scorer", "mean", "scored", "errored", "skipped", "tokens", "cost $"]
    previous = {r["scorer_id"]: r for r in (result.comparison or [])}
    if previous:
        columns += ["Δ prev", "95% CI"]
    for col in columns:
        table.add_column(col, justify="left" if col == "scorer" else "right", no_wrap=col != "scorer")
    for scorer, s in result.summary["scorers"].items():
        mean = "–" if s["mean"] is None else f"{s['mean']:.3f}"
        cost = "–" if s["judge_cost_usd"] is None else f"{s['judge_cost_usd']:.4f}"
        row: list[Any] = [literal(scorer, direction_note(s)), mean, str(s["scored"]), str(s["errored"]), str(s["skipped"]),
                          str(s["judge_tokens"]), cost]
        if previous:
            c = previous.get(scorer)
            if c and c.get("mean_delta") is not None:
                low, high = c.get("ci_low"), c.get("ci_high")
                ci = f"[{low:+.3f}, {high:+.3f}]" if low is not None and high is not None else "–"
                row += [f"{c['mean_delta']:+.3f}", ci]
            else:
                row += ["–", "–"]
        table.add_row(*row)
    return fit(console, table, drop=("tokens", "cost $", "95% CI", "Δ prev", "skipped", "errored"))


def measures_table(scorers: Sequence[tuple[str, bool]], descriptions: dict[str, str]) -> Table:
    """One line per scorer (id, higher is better) under its scores: what it measures and which way is better
    (flows/report/measures.py), so that a tone score is not read as a quality score."""
    table = Table(title="What each score measures", title_justify="left", box=None, show_header=False)
    table.add_column("scorer")
    table.add_column("measures", overflow="fold")
    for scorer_id, higher in scorers:
        table.add_row(literal(scorer_id), literal(measures_line(descriptions.get(scorer_id, ""), higher), style="dim"))
    return table


def _measures(result: Any) -> Table:
    """What each scorer of the run measures, as the run recorded them (a store it cannot reopen: the prebuilt
    catalogue's lines)."""
    from evalduck.flows.report.measures import scorer_descriptions
    from evalduck.flows.store import Store, StoreError

    try:
        config = Store(result.db).run_record(result.run_id).config
    except (StoreError, OSError, ValueError):
        config = None
    scorers = [(sid, s.get("higher_is_better") is not False) for sid, s in result.summary["scorers"].items()]
    return measures_table(scorers, scorer_descriptions(config))


# EvalConfig fields set by an option of another name (the others share theirs), for naming it in errors;
# tests/cli/test_run_options.py checks that every RunOptions field has its option, with the same default.
def print_result(out: Console, err: Console, result: Any, api_url: str | None, lasting: bool) -> None:
    """The summary table, what each scorer measures, the cache's table and where to look next; ``lasting``:
    the server outlives this process, so a link to the flow run is worth printing."""
    out.print(summary_table(result, out))
    noise = noise_table(result.summary["scorers"])
    if noise is not None:
        out.print(fit(out, noise))
    if result.summary["scorers"]:
        out.print(fit(out, _measures(result)))
    if result.cache is not None:
        from evalduck.flows.report.cache_table import cache_table

        out.print(cache_table(result.cache, out))
    if getattr(result, "max_cost", None) is not None and result.spend is not None:
        out.print(f"spend ${result.spend:.4f} of budget ${result.max_cost:.4f} (max_cost)", style="dim", highlight=False)
    errored = sum(s["errored"] for s in result.summary["scorers"].values())
    if errored:
        ref = shell_word(result.run_id) or result.run_id
        err.print(literal(f"{errored} cell(s) ended in error: see `evalduck show ", ref, "`", style="yellow"))
    if lasting and result.flow_run_id:
        out.print(literal("flow run: ", ui_url_for(api_url), "/runs/flow-run/", result.flow_run_id, style="dim"),
                  soft_wrap=True)
    # A command to paste, on one line: the run's name as a shell word, or its id when the name cannot be
    # pasted as typed (a control character in it).
    ref = shell_word(result.name or result.run_id) or shell_word(result.run_id) or result.run_id
    out.print(literal("results in ", result.db, "; try `evalduck show ", ref, "`", style="dim"), soft_wrap=True)
    if result.report:
        out.print(literal("report: ", result.report, style="dim"), soft_wrap=True)
    sys.stdout.flush()
