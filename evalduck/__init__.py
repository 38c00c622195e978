"""evalduck: evaluations of LLM applications as Prefect flows, with every result in DuckDB.

``evalduck.scorers`` is the scorer library (pure Python, never imports Prefect) and ``evalduck.flows`` runs
evals on Prefect and stores them. The names used most are here too, imported on first use, so that
``import evalduck.scorers`` stays free of Prefect and ``import evalduck`` costs nothing.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from evalduck.errors import EvalduckError as EvalduckError  # stdlib only: the base of every error evalduck raises

# For type checkers, which do not run __getattr__; `X as X` marks a re-export (the names are evalduck's API).
if TYPE_CHECKING:
    from evalduck.flows import EvalConfig as EvalConfig
    from evalduck.flows import EvalResult as EvalResult
    from evalduck.flows import RunOptions as RunOptions
    from evalduck.flows import ScorerSpec as ScorerSpec
    from evalduck.flows import SweepResult as SweepResult
    from evalduck.flows import SweepSpec as SweepSpec
    from evalduck.flows import run_eval_config as run_eval_config
    from evalduck.flows import run_evals as run_evals
    from evalduck.flows import run_sweep as run_sweep
    from evalduck.scorers import *  # noqa: F403

# The flows' public names; every other public name is the scorer library's (evalduck.scorers.__all__).
_FLOWS = ("run_evals", "run_eval_config", "EvalResult", "EvalConfig", "RunOptions", "ScorerSpec", "run_sweep",
          "SweepResult", "SweepSpec")


def _all() -> tuple[str, ...]:
    return _FLOWS + tuple(import_module("evalduck.scorers").__all__)


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return _all()
    if name == "__version__":
        from importlib.metadata import version

        return version("evalduck")
    if name in ("flows", "scorers"):
        return import_module(f"evalduck.{name}")
    if name.startswith("_"):
        raise AttributeError(f"module 'evalduck' has no attribute {name!r}")
    package = "evalduck.flows" if name in _FLOWS else "evalduck.scorers"
    module = import_module(package)
    if package == "evalduck.scorers" and name not in module.__all__:
        raise AttributeError(f"module 'evalduck' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_all()) | {"flows", "scorers"})
