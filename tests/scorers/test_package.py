"""The package stays pure: importing it pulls in neither prefect nor (until a judge is called) litellm."""

from __future__ import annotations

import subprocess
import sys

import scorers


def test_import_is_light_and_prefect_free() -> None:
    code = "import sys, scorers, scorers.testing; print('prefect' in sys.modules, 'litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_public_names() -> None:
    assert isinstance(scorers.__all__, tuple)
    for name in scorers.__all__:
        assert getattr(scorers, name) is not None
    assert issubclass(scorers.ConfigError, ValueError) and issubclass(scorers.ScorerInputError, ValueError)
    assert issubclass(scorers.InvalidJudgeAnswer, scorers.JudgeTransientError)
    assert issubclass(scorers.JudgeConfigError, scorers.JudgeError) and issubclass(scorers.JudgeError, scorers.EvalduckError)
