"""`evalduck run` has an option for every RunOptions field and no run option of its own, each with the
model's default, so the CLI, the UI form and `run_evals` cannot drift apart."""

from __future__ import annotations

import typer.main

from evalduck.flows.cli import app
from evalduck.flows.cli.run import _PARAM_OF_FIELD
from evalduck.flows.config import EvalConfig, RunOptions

# Options of `run` that are not run options: what to evaluate, how the terminal shows it, which server, and
# `--dry-run` (`--format`), the run's preflight instead of the run.
NOT_RUN_OPTIONS = {"dataset", "scorers", "target", "verbose", "ephemeral", "dry_run", "output_format"}
GLOBAL = {"db"}  # `evalduck --db PATH run ...`, shared by every command


def _run_params() -> dict[str, object]:
    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    field_of = {param: field for field, param in _PARAM_OF_FIELD.items()}
    return {field_of.get(p.name, p.name): p for p in command.params}


def test_every_run_option_has_a_cli_option_and_back() -> None:
    params = _run_params()
    assert set(params) - NOT_RUN_OPTIONS == set(RunOptions.model_fields) - GLOBAL
    assert set(_PARAM_OF_FIELD) <= set(EvalConfig.model_fields)


def test_cli_defaults_are_the_models() -> None:
    params = _run_params()
    for field, info in RunOptions.model_fields.items():
        if field in GLOBAL:
            continue
        assert params[field].default == info.default, field  # type: ignore[attr-defined]


def test_the_judge_child_is_started_early_only_for_runs_that_call_a_model(monkeypatch: object) -> None:
    from evalduck.flows.cli.run_checks import calls_models as _calls_models

    monkeypatch.delenv("EVALDUCK_JUDGE_MODEL", raising=False)  # type: ignore[attr-defined]
    assert not _calls_models(EvalConfig(dataset="d.jsonl"))  # answer relevancy without a model is skipped
    assert _calls_models(EvalConfig(dataset="d.jsonl", judge_model="openai/x"))
    assert _calls_models(EvalConfig(dataset="d.jsonl", scorers=["tone-scorer"], target="model:openai/x"))
    assert not _calls_models(EvalConfig(dataset="d.jsonl", scorers=["tone-scorer"], judge_model="openai/x"))
    monkeypatch.setenv("EVALDUCK_JUDGE_MODEL", "openai/y")  # type: ignore[attr-defined]
    assert _calls_models(EvalConfig(dataset="d.jsonl"))
