"""What a scorer reads of a run (ScorerInput, StepContext): built from keywords or a Mastra dict, checked
with named fields, frozen, and never keyed on the run id."""

from __future__ import annotations

import pytest

from evalduck.scorers import ScorerInput, ScorerInputError, StepContext


class TestFromCall:
    def test_keywords(self) -> None:
        run = ScorerInput.from_call((), {"input": "q", "output": "a", "ground_truth": "", "run_id": "r1"})
        assert (run.input, run.output, run.ground_truth, run.run_id) == ("q", "a", "", "r1")

    def test_mastra_dict(self) -> None:
        run = ScorerInput.from_call(
            ({"input": "q", "output": "a", "groundTruth": "g", "requestContext": {"user": 1}, "runId": "r"},), {}
        )
        assert run.ground_truth == "g" and run.request_context == {"user": 1} and run.run_id == "r"
        assert run.model_dump(by_alias=True)["groundTruth"] == "g"

    def test_instance_passes_through(self) -> None:
        run = ScorerInput(input="q", output="a")
        assert ScorerInput.from_call((run,), {}) is run

    def test_missing_output(self) -> None:
        with pytest.raises(ScorerInputError, match="missing `output`"):
            ScorerInput.from_call((), {"input": "q"})

    def test_output_none_is_missing(self) -> None:
        with pytest.raises(ScorerInputError, match="`output` is None"):
            ScorerInput.from_call((), {"input": "q", "output": None})

    def test_non_string_content(self) -> None:
        with pytest.raises(ScorerInputError, match=r"`output\[0\]`.content must be a string, got int"):
            ScorerInput.from_call((), {"output": [{"role": "assistant", "content": 5}]})

    def test_unknown_field(self) -> None:
        with pytest.raises(ScorerInputError, match="unknown field `groundtruth`"):
            ScorerInput.from_call(({"output": "a", "groundtruth": "g"},), {})

    def test_both_dict_and_keywords(self) -> None:
        with pytest.raises(ScorerInputError, match="not both"):
            ScorerInput.from_call(({"output": "a"},), {"input": "q"})

    def test_request_context_must_be_json(self) -> None:
        with pytest.raises(ScorerInputError, match="request_context"):
            ScorerInput.from_call((), {"output": "a", "request_context": {"x": object()}})

    def test_bad_input_errors_are_value_errors(self) -> None:
        with pytest.raises(ValueError):
            ScorerInput.from_call((), {"output": 1})


def test_fields_for_key_never_has_run_id() -> None:
    run = ScorerInput(input="q", output="a", run_id="r")
    assert "run_id" not in run.fields_for_key()


def test_context_is_frozen() -> None:
    ctx = StepContext(run=ScorerInput(output="a"))
    with pytest.raises(ValueError):
        ctx.score = 1.0  # type: ignore[misc]
