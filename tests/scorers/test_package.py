"""The package stays pure: importing it pulls in neither prefect nor (until a judge is called) litellm."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalduck import scorers


def test_import_is_light_and_prefect_free() -> None:
    code = ("import sys; import evalduck.scorers as scorers, evalduck.scorers.testing; from evalduck.scorers import *; "
            "print(*(m in sys.modules for m in ('prefect', 'litellm', 'simplemma', 'stop_words'))); "
            "print(len(scorers.__all__), len(set(scorers.__all__)), all(n in globals() for n in scorers.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    light, names = out.splitlines()
    assert light.split() == ["False"] * 4
    n = len(scorers.__all__)
    assert names.split() == [str(n), str(n), "True"]  # `import *` gives every public name, each listed once


def test_public_names() -> None:
    assert isinstance(scorers.__all__, tuple)
    for name in scorers.__all__:
        assert getattr(scorers, name) is not None
    assert issubclass(scorers.ConfigError, ValueError) and issubclass(scorers.ScorerInputError, ValueError)
    assert issubclass(scorers.InvalidJudgeAnswer, scorers.JudgeTransientError)
    assert issubclass(scorers.JudgeConfigError, scorers.JudgeError) and issubclass(scorers.JudgeError, scorers.EvalduckError)


def test_describe_validation_names_every_problem() -> None:
    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        size: int = Field(ge=1)
        name: str

    with pytest.raises(ValidationError) as info:
        Options.model_validate({"size": 0, "colour": "red"})
    assert scorers.describe_validation(info.value) == (
        "`size` input should be greater than or equal to 1, got 0; missing `name`; unknown option `colour`"
    )
    assert scorers.describe_validation(info.value, "field", known=("size", "name")).endswith(
        "unknown field `colour` (fields: size, name)"
    )
    assert scorers.error_rule({"msg": "Value error, Must be odd"}) == "must be odd"
