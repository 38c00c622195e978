"""A sweep as data (docs/sweeps.md): ``SweepSpec``, the ``sweep`` parameter of the ``run-sweep`` flow, which the
Prefect UI renders as a form (its ``base`` as the eval's own form), and the fields it shares with a sweep file.

The fields, their defaults, bounds and help are written once, in ``SweepFields``: a sweep file's shape
(flows/inputs/sweeps.py) keeps ``base`` a mapping, since it is checked merged with each candidate's values and
every problem named by its line; ``SweepSpec`` types it as ``EvalConfig``, so the form shows the eval's fields.
Either is checked whole by the same code (``sweeps.sweep_from_data``; ``sweeps.sweep_from_spec`` for this one).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalduck.flows.config import EvalConfig
from evalduck.flows.run_form import plain_optionals

__all__ = ("AXES", "MAX_REPEAT", "SweepFields", "SweepSpec")

# The fields a candidate may set: what is evaluated and by which judge. Run options (concurrency, rates, the
# store...) are the sweep's, the same for every candidate; dataset and scorers are what makes them comparable.
AXES = ("target", "target_system_prompt", "target_api_base", "judge_model", "judge_api_base")
MAX_REPEAT = 20

_BASE_HELP = ("The eval every candidate runs: dataset, scorers, judge and run options (concurrency, rates, "
              "retries, the store), the same for all. Leave empty here what the axes or candidates vary.")


class SweepFields(BaseModel):
    """A sweep's fields; what depends on several values (labels, the baseline, each candidate's config) is
    checked by ``sweeps.sweep_from_data``."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(
        default=None, description="The sweep's name; its runs are named <name>/<candidate label>. Empty: a sweep "
        "file's stem, or 'sweep' for a sweep given as a parameter.",
    )
    base: Any = Field(description=_BASE_HELP)  # each kind of sweep says its type
    axes: dict[str, list[Any]] = Field(
        default_factory=dict, description=f"The candidates are every combination of these values. Each key is "
        f"one of {', '.join(AXES)} or a scorer's option (<scorer id>.<option>, the scorer listed in base), each "
        f"value a list of values. A system prompt may be 'file:<path>' (relative to the project folder). Or give "
        f"candidates instead.",
    )
    candidates: list[dict[str, Any]] = Field(
        default_factory=list, description="Instead of axes: the candidates one by one, each a mapping of the same "
        "keys as axes, with an optional label and at most one baseline: true.",
    )
    repeat: int = Field(
        default=1, ge=1, le=MAX_REPEAT, description=f"Runs of each candidate (1-{MAX_REPEAT}), to see run-to-run "
        f"noise.",
    )
    baseline: str | dict[str, Any] | None = Field(
        default=None, description="The candidate the others are compared with: its label, or the axis values that "
        "pick it (e.g. {\"target\": ...}). Empty: the one marked baseline: true, else the first.",
    )


class SweepSpec(SweepFields):
    """A sweep: candidates that differ only where the axes (or the candidates) say, each run on the base eval and
    compared with the baseline (docs/sweeps.md)."""

    # The docstring is the form's help. Given as data (run_sweep's `sweep`, the run-sweep deployment), not as a
    # file: a problem is named by its field, `sweep parameter axes.target[1]: ...`, where a file's names its line.
    model_config = ConfigDict(extra="forbid", json_schema_extra=lambda schema, _cls: plain_optionals(schema))

    base: EvalConfig = Field(title="Base", description=_BASE_HELP)  # the form's title, not the model's name

    def as_data(self) -> dict[str, Any]:
        """What a sweep file would say: the fields given, base's too (a base field left out is no conflict with
        an axis, as in a file)."""
        return self.model_dump(exclude_unset=True)
