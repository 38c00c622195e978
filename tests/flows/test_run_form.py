"""The Custom run form's schema (flows/run_form.py): the fields a person sets first, the other run options
in one `advanced` field that starts at its "Defaults" tab, no `X | None` tabs (the UI's 'Property is type
"None"'), the scorer ids listed once; and what the form sends, and what the API sends flat, both run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from prefect.utilities.schema_tools.validation import ValidationError, validate
from pydantic import ValidationError as PydanticValidationError

from evalduck.flows import run_eval_config
from evalduck.flows.config import DEFAULT_SCORERS, SCORER_IDS, EvalConfig, RunOptions
from evalduck.flows.run_form import ADVANCED, FORM_FIELDS


def _schema() -> dict[str, Any]:
    return run_eval_config.parameters.model_dump()


def _form_properties(schema: dict[str, Any]) -> dict[str, Any]:
    return schema["definitions"]["EvalConfig"]["properties"]


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def test_the_form_lists_the_common_fields_then_one_advanced_field_starting_at_defaults() -> None:
    properties = _form_properties(_schema())
    assert list(properties) == [*FORM_FIELDS, ADVANCED]
    assert [p["position"] for p in properties.values()] == list(range(len(properties)))
    defaults, change = properties[ADVANCED]["anyOf"]
    assert defaults["properties"] == {} and defaults["title"] == "Defaults"  # the tab open when nothing is set
    assert set(change["properties"]) == set(RunOptions.model_fields) - set(FORM_FIELDS)
    assert properties["name"]["title"] == "Eval name" and "compared" in properties["name"]["description"]


def test_no_field_of_the_form_is_a_choice_with_none() -> None:
    shown = {"properties": _form_properties(_schema()), "definitions": _schema()["definitions"]["ScorerSpec"]}
    with_null = [node for node in _walk(shown) if {"type": "null"} in node.get("anyOf", [])]
    assert with_null == []


def test_the_scorer_ids_are_listed_once() -> None:
    """Once in the Scorers field's help, not again for each scorer of the list (the three defaults are also
    the default value)."""
    schema = _schema()
    text = json.dumps(schema)
    assert {text.count(scorer) for scorer in SCORER_IDS if scorer not in DEFAULT_SCORERS} == {1}
    assert not any(scorer in schema["definitions"]["ScorerSpec"]["properties"]["id"]["description"]
                   for scorer in SCORER_IDS)


@pytest.mark.parametrize("config", [
    {"dataset": "d.jsonl", "name": "ui", ADVANCED: {"concurrency": 2, "report": False}},  # what the form sends
    {"dataset": "d.jsonl", "name": "ui", "concurrency": 2, "report": False, "judge_rpm": None},  # the API, flat
    {**EvalConfig(dataset="d.jsonl", name="ui", concurrency=2, report=False).model_dump(mode="json")},  # nulls too
])
def test_the_server_accepts_the_forms_and_the_apis_configs_and_the_flow_reads_them_alike(config: dict) -> None:
    validate({"config": config}, _schema(), raise_on_error=True)  # the server's check (enforce_parameter_schema)
    parsed = EvalConfig.model_validate(config)
    assert (parsed.concurrency, parsed.report, parsed.judge_rpm) == (2, False, None)
    assert ADVANCED not in parsed.model_dump()  # a run's stored config stays flat


@pytest.mark.parametrize("config", [
    {"dataset": "d.jsonl", ADVANCED: {"concurrency": 0}},
    {"dataset": "d.jsonl", "concurrency": 0},
    {"dataset": "d.jsonl", "concurrrency": 2},
])
def test_the_server_refuses_a_bad_run_option_either_way(config: dict) -> None:
    with pytest.raises(ValidationError):
        validate({"config": config}, _schema(), raise_on_error=True)


def test_an_option_given_in_advanced_and_beside_it_is_refused() -> None:
    with pytest.raises(PydanticValidationError, match="concurrency given in `advanced` and beside it"):
        EvalConfig.model_validate({"dataset": "d", "concurrency": 2, ADVANCED: {"concurrency": 3}})
