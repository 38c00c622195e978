"""The plan a run is given is frozen once ``prepare_run`` built it; where its requests, task runs and progress
go comes in beside it, as the run's ``EngineServices``."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest
from flow_helpers import rows

from evalduck.flows.config import RunOptions
from evalduck.flows.engine import EngineServices, RunPlan
from evalduck.flows.run.prepare import Prepared, prepare_run
from evalduck.flows.run.scope import run_scope
from evalduck.scorers import LiteLLMTransport

logger = logging.getLogger("test_engine_plan")


class Notes:
    """A progress sink that keeps what it is told."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def start(self, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def finish(self) -> None: ...

    def note(self, message: str) -> None:
        self.notes.append(message)


def _prepared(tmp_path: Path, **options: Any) -> Prepared:
    return prepare_run(data=rows(3), scorers=["textual-difference-scorer"], target=None,
                       options=RunOptions(db=str(tmp_path / "evals.duckdb"), cache_dir=str(tmp_path / "cache"),
                                          **options),
                       on_item_complete=None, config=None, flow_run_id=None, sink=None, logger=logger)


def test_a_built_plan_refuses_every_assignment(tmp_path: Path) -> None:
    plan = _prepared(tmp_path).plan
    for field in dataclasses.fields(RunPlan):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(plan, field.name, getattr(plan, field.name))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.transport = LiteLLMTransport()  # type: ignore[attr-defined]
    assert isinstance(plan.items, tuple) and isinstance(plan.scorers, tuple) and isinstance(plan.skipped, tuple)


@pytest.mark.parametrize("service", ["transport", "dispatch", "sink", "on_progress"])
def test_what_a_run_is_handed_besides_its_plan_is_not_on_the_plan(tmp_path: Path, service: str) -> None:
    """The flow used to set these on the plan after it was built; now they are the services' only."""
    plan = _prepared(tmp_path).plan
    with pytest.raises(TypeError, match=service):
        dataclasses.replace(plan, **{service: None})
    assert service in {f.name for f in dataclasses.fields(EngineServices)}


def test_a_resumed_plans_cells_cannot_be_changed(tmp_path: Path) -> None:
    first = _prepared(tmp_path).plan
    first.store.finish_run(first.run_id, "failed")  # nothing computed: every cell is still to do
    plan = _prepared(tmp_path, resume=first.run_id).plan
    assert plan.run_id == first.run_id and isinstance(plan.todo, frozenset)
    assert plan.todo == {(f"q-{i}", "textual-difference-scorer") for i in range(3)}
    with pytest.raises(AttributeError):
        plan.todo.add(("q-9", "textual-difference-scorer"))  # type: ignore[union-attr]


def test_the_scope_hands_the_engine_its_services(tmp_path: Path) -> None:
    plan = _prepared(tmp_path, judge_process=True).plan  # code-only scorers: no judge child is needed
    sink, progress = Notes(), lambda done, total: None
    with run_scope(plan, logger, sink=sink, on_progress=progress) as services:
        assert isinstance(services.transport, LiteLLMTransport)
        assert services.dispatch is None and services.sink is sink and services.on_progress is progress
        with pytest.raises(dataclasses.FrozenInstanceError):
            services.dispatch = None  # type: ignore[misc]
