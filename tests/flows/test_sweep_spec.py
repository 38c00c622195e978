"""A sweep given as data (SweepSpec, flows/inputs/sweep_spec.py): the sweep a file with the same content gives,
the same checks with each problem named by its field, and run_sweep's `sweep` parameter as the Prefect UI's form
(the run-sweep deployment in prefect.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.utilities.callables import parameter_schema
from prefect.utilities.schema_tools.validation import ValidationError, validate

from evalduck.flows import SweepSpec, run_sweep
from evalduck.flows.config import EvalConfig
from evalduck.flows.inputs.sweeps import Sweep, SweepFileError, load_sweep, sweep_from_spec
from evalduck.flows.run_form import FORM_FIELDS

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "datasets" / "sweep-demo.yaml"


def same(a: Sweep, b: Sweep) -> None:
    """Everything but where each was written (a file's lines, a parameter's fields)."""
    assert (a.name, a.repeat, a.axes, a.baseline.label) == (b.name, b.repeat, b.axes, b.baseline.label)
    assert [(c.label, dict(c.values), c.config, c.baseline) for c in a.candidates] == \
           [(c.label, dict(c.values), c.config, c.baseline) for c in b.candidates]


def deployment(name: str) -> dict[str, Any]:
    config = yaml.safe_load((REPO / "prefect.yaml").read_text())
    (found,) = [d for d in config["deployments"] if d["name"] == name]
    return found


def test_the_shipped_sweep_as_data_is_the_file_and_the_deployment_runs_it() -> None:
    from_file = load_sweep(SHIPPED, root=REPO)
    from_spec = sweep_from_spec(SweepSpec.model_validate(yaml.safe_load(SHIPPED.read_text())), root=REPO)
    same(from_file, from_spec)
    assert from_spec.path is None and from_file.path == str(SHIPPED)
    assert [c.label for c in from_spec.candidates] == [
        "support_bots:faq_bot | terse.txt", "support_bots:faq_bot | friendly.txt",
        "support_bots:topic_bot | terse.txt", "support_bots:topic_bot | friendly.txt"]
    assert from_spec.baseline.label == "support_bots:faq_bot | terse.txt"
    # prefect.yaml's run-sweep deployment passes the shipped sweep, read as Prefect reads a flow run's parameters.
    shipped = deployment("sweep-demo")
    assert shipped["entrypoint"] == "evalduck.flows.sweep_flow:run_sweep" and shipped["enforce_parameter_schema"]
    parameters = run_sweep.validate_parameters(shipped["parameters"])
    assert parameters["sweep_file"] is None
    same(from_file, sweep_from_spec(parameters["sweep"], root=REPO))


def test_a_list_of_candidates_with_labels_repeats_and_a_marked_baseline(tmp_path: Path) -> None:
    data = {"name": "models", "repeat": 2,
            "base": {"dataset": "d.jsonl", "scorers": ["tone-scorer", "answer-relevancy-scorer"], "concurrency": 4},
            "candidates": [{"target": "model:openai/a", "answer-relevancy-scorer.threshold": 0.5},
                           {"label": "big", "target": "model:openai/b", "answer-relevancy-scorer.threshold": 0.7,
                            "baseline": True}]}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    from_file = load_sweep(path, root=tmp_path)
    same(from_file, sweep_from_spec(SweepSpec.model_validate(data), root=tmp_path))
    same(from_file, sweep_from_spec(data, root=tmp_path))  # a mapping, as the API sends it
    assert [c.label for c in from_file.candidates] == ["model:openai/a | 0.5", "big"]
    assert from_file.baseline.label == "big" and from_file.repeat == 2
    assert from_file.baseline.config.scorers[1].options == {"threshold": 0.7}


def problems(spec: SweepSpec | dict[str, Any]) -> list[str]:
    with pytest.raises(SweepFileError) as caught:
        sweep_from_spec(spec)
    return caught.value.problems


def test_every_problem_of_a_spec_is_named_by_its_field() -> None:
    bad = {"base": {"dataset": "d.jsonl", "scorers": ["tone-scorer"], "colour": "red"},
           "axes": {"target_api_base": []},
           "candidates": [{"target": "model:a", "baseline": True}, {"target": "model:b", "baseline": True, "tone": 1}]}
    assert problems(bad) == [
        "sweep parameter candidates: give `axes` or `candidates`, not both",
        "sweep parameter axes.target_api_base: axis 'target_api_base' has no values: give it one or more, or remove it",
        "sweep parameter candidates[1].tone: 'tone' cannot vary between candidates; what can: target, "
        "target_system_prompt, target_api_base, judge_model, judge_api_base, or a scorer's option as "
        "<scorer id>.<option>",
        "sweep parameter base.colour: colour: Extra inputs are not permitted",
        "sweep parameter candidates[0].baseline: two baselines (sweep parameter candidates[0].baseline; "
        "sweep parameter candidates[1].baseline): a sweep has one",
    ]
    assert problems({**bad, "colour": "red"}) == [
        "sweep parameter colour: colour: unknown field: remove it or check its spelling"]


def test_a_value_of_an_axis_is_named_by_its_index(tmp_path: Path) -> None:
    spec = SweepSpec(base=EvalConfig(dataset="d.jsonl"),
                     axes={"target": ["model:a", "model:b"], "target_system_prompt": ["Be brief.", "file:nope.txt"]})
    (problem,) = problems(spec)
    assert problem.startswith("sweep parameter axes.target_system_prompt[1]: 'file:nope.txt': cannot read ")
    assert problems(spec.model_copy(update={"repeat": 1, "axes": {"target": ["model:a"]}})) == [
        "sweep parameter: one candidate run once compares nothing: add an axis value or a candidate, or set "
        "`repeat:` to 2 or more to see run-to-run noise"]


def test_run_sweep_takes_a_file_or_a_sweep_exactly_one() -> None:
    spec = SweepSpec.model_validate(yaml.safe_load(SHIPPED.read_text()))
    with pytest.raises(SweepFileError, match=r"exactly one; got both$"):
        run_sweep.fn(sweep_file=str(SHIPPED), sweep=spec)
    with pytest.raises(SweepFileError, match=r"exactly one; got neither$"):
        run_sweep.fn()


def test_the_sweep_parameter_is_a_form_with_the_evals_fields() -> None:
    """What the Prefect UI renders (Custom run) and the server checks (enforce_parameter_schema): `sweep` an object
    whose `base` is the eval's form; no required parameter, so Quick run starts the deployment's sweep at once."""
    schema = parameter_schema(run_sweep).model_dump_for_openapi()
    assert not schema.get("required")
    refs = [option["$ref"] for option in schema["properties"]["sweep"]["anyOf"] if "$ref" in option]
    assert refs == ["#/definitions/SweepSpec"]
    spec = schema["definitions"]["SweepSpec"]
    assert list(spec["properties"]) == ["name", "base", "axes", "candidates", "repeat", "baseline"]
    assert spec["required"] == ["base"] and spec["additionalProperties"] is False
    assert spec["properties"]["base"]["$ref"] == "#/definitions/EvalConfig"
    assert spec["properties"]["name"]["type"] == "string"  # no 'Property is type "None"' tab
    assert all(spec["properties"][key]["description"] for key in spec["properties"])
    assert set(FORM_FIELDS) <= set(schema["definitions"]["EvalConfig"]["properties"])
    validate(deployment("sweep-demo")["parameters"], schema, raise_on_error=True)
    for bad in ({"colour": "red"}, {"repeat": 0}, {"base": {"dataset": "d.jsonl", "concurrency": 0}}):
        with pytest.raises(ValidationError):
            validate({"sweep": {"base": {"dataset": "d.jsonl"}, **bad}}, schema, raise_on_error=True)
