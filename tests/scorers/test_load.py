"""SCORERS.md 0.7: evalduck.scorers.load_scorer("module.path:attribute", options)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from evalduck.scorers import ConfigError, Scorer, load_scorer, locate_scorer

MODULE = """
from evalduck.scorers import create_scorer, create_tone_scorer

calls = []

def make(options=None):
    calls.append(options)
    bonus = (options or {}).get("bonus", 0)
    return create_scorer("length", generate_score=lambda ctx: min(1.0, len(ctx.run.output) / 10) + bonus,
                         version="3", higher_is_better=False, options=dict(options or {}))

strict_tone = create_tone_scorer(scale=2)

class Factories:
    tone = staticmethod(create_tone_scorer)

def broken(options=None):
    raise RuntimeError("inside the factory")

def not_a_scorer(options=None):
    return 42

NUMBER = 7
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh module in a folder that is the working directory and not on sys.path."""
    name = f"evals_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_a_factory_with_and_without_options(module: str) -> None:
    with_options = load_scorer(f"{module}:make", {"bonus": 0.5})
    assert (with_options.id, with_options.version, with_options.higher_is_better) == ("length", "3", False)
    assert with_options.run(output="12345").score == 1.0
    plain = load_scorer(f"{module}:make")
    assert plain.options == {} and load_scorer(f"{module}:make", {}).options == {}
    assert sys.modules[module].calls == [{"bonus": 0.5}, None, None]  # attr(options), else attr()


def test_the_working_directory_is_on_sys_path_only_while_importing(module: str) -> None:
    load_scorer(f"{module}:make")
    assert str(Path.cwd()) not in sys.path


def test_a_scorer_is_used_as_is(module: str) -> None:
    scorer = load_scorer(f"{module}:strict_tone")
    assert scorer is sys.modules[module].strict_tone and scorer.options["scale"] == 2
    with pytest.raises(ValueError, match=f"scorer '{module}:strict_tone' is a Scorer, built already: it takes no options"):
        load_scorer(f"{module}:strict_tone", {"scale": 3})


def test_a_dotted_attribute(module: str) -> None:
    assert load_scorer(f"{module}:Factories.tone", {"scale": 3}).options["scale"] == 3
    assert isinstance(locate_scorer(f"{module}:strict_tone"), Scorer)


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("{m}", "expected 'module.path:attribute' (one colon)"),
        ("{m}:make:x", "(one colon)"),
        (":make", "with both parts"),
        ("{m}.py:make", "give the module's import name, not its file: '{m}:make'"),
        ("no_such_module_13:make", "cannot import module 'no_such_module_13'"),
        ("{m}:nothing", "module '{m}' has no attribute 'nothing'"),
        ("{m}:Factories.nothing", "has no attribute 'Factories.nothing'"),
        ("{m}:NUMBER", "'NUMBER' is a int, not a Scorer or a function that returns one"),
        ("{m}:not_a_scorer", "the factory returned a int, not a Scorer"),
    ],
)
def test_bad_paths_name_the_path(module: str, path: str, fragment: str) -> None:
    path = path.format(m=module)
    with pytest.raises(ValueError) as info:
        load_scorer(path)
    assert str(info.value).startswith(f"scorer {path!r}") and fragment.format(m=module) in str(info.value)


def test_errors_inside_the_factory_propagate(module: str) -> None:
    with pytest.raises(RuntimeError, match="inside the factory"):
        load_scorer(f"{module}:broken")
    with pytest.raises(ConfigError, match="unknown option `nope`"):
        load_scorer("scorers:create_tone_scorer", {"nope": 1})


def test_options_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match="options must be a mapping, got list"):
        load_scorer("scorers:create_tone_scorer", ["scale"])  # type: ignore[arg-type]


def test_from_a_fresh_interpreter_without_the_working_directory_on_sys_path(tmp_path: Path) -> None:
    (tmp_path / "myevals.py").write_text(MODULE)
    code = textwrap.dedent("""
        import sys
        from evalduck.scorers import load_scorer
        assert '' not in sys.path
        scorer = load_scorer('myevals:make', {'bonus': 0.25})
        print(scorer.id, scorer.run(output='abcde').score)
    """)
    # -P: no working directory on sys.path, so load_scorer must put it there itself
    out = subprocess.run([sys.executable, "-P", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.split() == ["length", "0.75"]
