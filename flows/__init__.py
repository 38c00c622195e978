"""evalduck flows: the eval flows on Prefect, the DuckDB store and the CLI.

Lazy, like Prefect's own ``__init__``: ``import evalduck.flows.store`` and the results CLI never import prefect;
``from evalduck import run_evals`` does, on first use.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalduck.flows.config import EvalConfig, RunOptions, ScorerSpec
    from evalduck.flows.eval_flow import EvalResult, run_eval_config, run_evals
    from evalduck.flows.inputs.sweep_spec import SweepSpec
    from evalduck.flows.sweep_flow import SweepResult, run_sweep

_PUBLIC: dict[str, str] = {
    "run_evals": "evalduck.flows.eval_flow",
    "run_eval_config": "evalduck.flows.eval_flow",
    "EvalResult": "evalduck.flows.eval_flow",
    "EvalConfig": "evalduck.flows.config",
    "RunOptions": "evalduck.flows.config",
    "ScorerSpec": "evalduck.flows.config",
    "run_sweep": "evalduck.flows.sweep_flow",
    "SweepResult": "evalduck.flows.sweep_flow",
    "SweepSpec": "evalduck.flows.inputs.sweep_spec",
}

__all__ = ("run_evals", "run_eval_config", "EvalResult", "EvalConfig", "RunOptions", "ScorerSpec", "run_sweep",
           "SweepResult", "SweepSpec")


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'evalduck.flows' has no attribute {name!r}")
    if module in ("evalduck.flows.eval_flow", "evalduck.flows.sweep_flow") and "prefect" not in sys.modules:
        from evalduck.flows.settings import apply_process_defaults

        apply_process_defaults()  # an entry point: before prefect is imported (no telemetry, patient start)
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_PUBLIC))
