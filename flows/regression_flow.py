"""The scheduled regression check: run an eval, compare it with the previous run of the same name, and
fail the flow run (red in the Prefect UI, visible to automations) when a scorer regressed.

A regression uses the rule of `evalduck compare --fail-below`: the upper end of the 95% interval of the
paired delta (this run minus the previous one) lies below `-max_drop`, so noise alone does not fail it.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from pydantic import BaseModel

from flows.artifacts import artifact_key, comparison_markdown
from flows.config import DEMO_CONFIG, EvalConfig
from flows.eval_flow import EvalResult, run_eval_config

__all__ = ("regression_check", "RegressionDetected", "RegressionReport", "find_regressions")


class RegressionDetected(RuntimeError):
    """Raised inside the flow so that its run ends Failed, with the regressed scorers in the message."""


class RegressionReport(BaseModel):
    """What the check found; the flow's return value when nothing regressed."""

    run_id: str
    previous_run_id: str | None
    regressed: list[str]
    comparison: list[dict[str, Any]]


def upper_bound(row: dict[str, Any]) -> float | None:
    """The 95% upper bound of the paired delta, or the mean delta when too few items give no interval."""
    bound = row.get("ci_high")
    if bound is None or bound != bound:  # NULL, or NaN from a zero-variance single pair
        bound = row.get("mean_delta")
    return None if bound is None or bound != bound else float(bound)


def find_regressions(comparison: list[dict[str, Any]], max_drop: float) -> list[str]:
    """Scorer ids whose paired delta is credibly below `-max_drop`."""
    return [
        str(row["scorer_id"])
        for row in comparison
        if (bound := upper_bound(row)) is not None and bound < -max_drop
    ]


def verdict_markdown(result: EvalResult, regressed: list[str], max_drop: float) -> str:
    """The verdict above the same comparison table the eval run shows."""
    verdict = f"**REGRESSION** in {', '.join(regressed)}" if regressed else "no regression"
    rule = f"a scorer fails when the 95% upper bound of its paired delta is below {0.0 - max_drop:+.3f}"
    table = comparison_markdown(result.comparison or [], str(result.previous_run_id), result.run_id, result.name)
    return f"# Regression check: {verdict}\n\n({rule})\n\n{table}"


@flow(name="evalduck-regression-check")
def regression_check(config: EvalConfig = DEMO_CONFIG, max_drop: float = 0.0) -> RegressionReport:
    """Run the eval, then compare it with the previous run of the same name and fail on a regression.

    Args:
        config: The eval to run; its `name` identifies the series of runs to compare (default: the demo
            eval, datasets/demo.jsonl, run name "demo").
        max_drop: Tolerated drop of a scorer's mean (0 fails on any credible drop).
    """
    logger = get_run_logger()
    if not config.name:
        raise ValueError("`config.name` is required: the regression check compares runs of the same name")
    result = run_eval_config(config)
    if result.previous_run_id is None or result.comparison is None:
        create_markdown_artifact(
            f"# Regression check: first run\n\nFirst run named `{config.name}` (`{result.run_id}`): "
            "nothing to compare yet.\n",
            key=artifact_key(config.name, "regression"), description="regression check",
        )
        logger.info("first run named %r: nothing to compare", config.name)
        return RegressionReport(run_id=result.run_id, previous_run_id=None, regressed=[], comparison=[])
    regressed = find_regressions(result.comparison, max_drop)
    create_markdown_artifact(
        verdict_markdown(result, regressed, max_drop),
        key=artifact_key(config.name, "regression"), description="regression check",
    )
    if regressed:
        raise RegressionDetected(
            f"{config.name}: {', '.join(regressed)} regressed against run {result.previous_run_id} "
            f"(95% upper bound of the paired delta below {0.0 - max_drop:+.3f}); see the regression artifact"
        )
    logger.info("no regression against run %s", result.previous_run_id)
    return RegressionReport(
        run_id=result.run_id, previous_run_id=result.previous_run_id, regressed=[], comparison=result.comparison
    )
