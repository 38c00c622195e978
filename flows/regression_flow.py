"""The scheduled regression check: run an eval, compare it with the previous run of the same name, and
fail the flow run (red in the Prefect UI, visible to automations) when a scorer regressed.

A regression is decided by `evalduck.flows.report.gate`, the rule `evalduck compare --fail-below` uses too: the upper end of
the 95% interval of the paired delta lies below `-max_drop` (for a lower-is-better scorer, such as
hallucination, the lower end lies above `+max_drop`: its rise is the regression); a scorer without an
interval is not gated.
"""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact
from pydantic import BaseModel

from evalduck.errors import EvalduckError
from evalduck.flows.config import DEMO_CONFIG, EvalConfig
from evalduck.flows.eval_flow import EvalResult, run_eval_config
from evalduck.flows.report.artifacts import artifact_key, comparison_markdown
from evalduck.flows.report.gate import GateVerdict, gate, judge_refusals, rule_text
from evalduck.flows.report.text import md_code, md_text
from evalduck.flows.run.redacting_flow import redacting_flow

__all__ = ("regression_check", "RegressionDetected", "RegressionReport", "UntrustedJudge")


class RegressionDetected(EvalduckError, RuntimeError):
    """Raised inside the flow so that its run ends Failed, with the regressed scorers in the message."""


class RegressionReport(BaseModel):
    """What the check found; the flow's return value when nothing regressed."""

    run_id: str
    previous_run_id: str | None
    regressed: list[str]
    ungated: list[str] = []
    comparison: list[dict[str, Any]]


def verdict_markdown(result: EvalResult, verdict: GateVerdict, max_drop: float) -> str:
    """The verdict above the same comparison table the eval run shows."""
    headline = f"**REGRESSION** in {md_text(', '.join(verdict.regressed))}" if verdict.regressed else "no regression"
    ungated = (f"\n\nNot gated (fewer than 2 items scored in both runs): {md_text(', '.join(verdict.ungated))}"
               if verdict.ungated else "")
    table = comparison_markdown(result.comparison or [], str(result.previous_run_id), result.run_id, result.name)
    return f"# Regression check: {headline}\n\n(a scorer fails when {rule_text(max_drop)}){ungated}\n\n{table}"


class UntrustedJudge(EvalduckError, RuntimeError):
    """Raised inside the flow when ``min_agreement`` refuses a judge scorer of the run (no calibration of its
    judge model and prompt good enough): its run ends Failed, one line per scorer in the message."""


def _check_judges(result: EvalResult, min_agreement: float) -> None:
    """``compare --min-agreement``'s rule (flows/report/gate.py ``judge_refusals``) on the run just made."""
    from evalduck.flows.store import Store
    from evalduck.flows.store.calibrations import find_calibration, others_for, run_judges

    store = Store(result.db)
    judges = run_judges(store.run_record(result.run_id).config)
    refusals = judge_refusals(judges, {s: find_calibration(store, k) for s, k in judges.items()},
                              {s: others_for(store, s) for s in judges}, min_agreement)
    if refusals:
        raise UntrustedJudge(f"run {result.run_id} is not gated on a judge it cannot trust: " + "; ".join(refusals))


@redacting_flow(name="evalduck-regression-check")
def regression_check(config: EvalConfig = DEMO_CONFIG, max_drop: float = 0.0,
                     min_agreement: float | None = None) -> RegressionReport:
    """Run the eval, then compare it with the previous run of the same name and fail on a regression.

    Args:
        config: The eval to run; its `name` identifies the series of runs to compare (default: the demo
            eval, datasets/demo.jsonl, run name "demo").
        max_drop: Tolerated drop of a scorer's mean, or rise of a lower-is-better scorer's (0 fails on any
            credible change for the worse).
        min_agreement: Fail unless each judge scorer's judge model and prompt have a calibration (`evalduck
            calibrate`) whose kappa 95% lower bound is at least this (empty: judges are not checked).
    """
    logger = get_run_logger()
    if not config.name:
        raise ValueError("`config.name` is required: the regression check compares runs of the same name")
    result = run_eval_config(config)
    if min_agreement is not None:
        _check_judges(result, min_agreement)
    if result.previous_run_id is None or result.comparison is None:
        create_markdown_artifact(
            f"# Regression check: first run\n\nFirst run named {md_code(config.name)} ({md_code(result.run_id)}): "
            "nothing to compare yet.\n",
            key=artifact_key(config.name, "regression"), description="regression check",
        )
        logger.info("first run named %r: nothing to compare", config.name)
        return RegressionReport(run_id=result.run_id, previous_run_id=None, regressed=[], comparison=[])
    verdict = gate(result.comparison, max_drop)
    if verdict.ungated:
        logger.warning("not gated (fewer than 2 items scored in both runs): %s", ", ".join(verdict.ungated))
    create_markdown_artifact(
        verdict_markdown(result, verdict, max_drop),
        key=artifact_key(config.name, "regression"), description="regression check",
    )
    if verdict.regressed:
        raise RegressionDetected(
            f"{config.name}: {', '.join(verdict.regressed)} regressed against run {result.previous_run_id} "
            f"({rule_text(max_drop)}); see the regression artifact"
        )
    logger.info("no regression against run %s", result.previous_run_id)
    return RegressionReport(
        run_id=result.run_id, previous_run_id=result.previous_run_id, regressed=[], ungated=verdict.ungated,
        comparison=result.comparison
    )
