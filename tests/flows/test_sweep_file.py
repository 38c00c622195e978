"""Sweep files (flows/inputs/sweeps.py): the candidates a file means, and every problem named by file and line
before anything runs."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalduck.flows.inputs.sweeps import SweepFileError, load_sweep

BASE = """\
base:
  dataset: data.jsonl
  scorers: [tone-scorer, answer-relevancy-scorer]
  concurrency: 4
"""


# The module the files' `m:<name>` targets import: `m:a` takes no system prompt, `m:b` does, any other name is a
# function too (load_sweep imports each `module:function` target, before anything runs).
TARGETS = """\
def a(question):
    return "a"

def b(question, system_prompt=None):
    return "b"

def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return lambda question: name
"""


@pytest.fixture(autouse=True, scope="module")
def targets_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    folder = tmp_path_factory.mktemp("targets")
    (folder / "m.py").write_text(TARGETS)
    sys.path.insert(0, str(folder))
    yield
    sys.path.remove(str(folder))
    sys.modules.pop("m", None)


def write(tmp_path: Path, text: str, name: str = "sweep.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(SweepFileError) as caught:
        load_sweep(write(tmp_path, text), root=tmp_path)
    return caught.value.problems


def test_the_product_of_the_axes_each_run_repeat_times_the_first_the_baseline(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "terse.txt").write_text("Answer in one line.")
    sweep = load_sweep(write(tmp_path, BASE + """\
axes:
  target:
    - model:openai/gpt-4o-mini
    - model:anthropic/claude-3-5-haiku-20241022
  target_system_prompt: ["file:prompts/terse.txt", "Answer in full sentences."]
  answer-relevancy-scorer.threshold: [0.7]
repeat: 2
"""), root=tmp_path)
    assert sweep.name == "sweep" and sweep.repeat == 2
    assert [c.label for c in sweep.candidates] == [
        "model:openai/gpt-4o-mini | terse.txt | 0.7", "model:openai/gpt-4o-mini | Answer in full sentences. | 0.7",
        "...claude-3-5-haiku-20241022 | terse.txt | 0.7", "...claude-3-5-haiku-20241022 | Answer in full sentences. | 0.7",
    ]
    first = sweep.candidates[0]
    assert first.baseline and sweep.baseline is first
    assert first.config.target == "model:openai/gpt-4o-mini"
    assert first.config.target_system_prompt == "Answer in one line."
    assert first.config.concurrency == 4 and first.config.dataset == "data.jsonl"
    assert [(s.id, s.options) for s in first.config.scorers] == [
        ("tone-scorer", {}), ("answer-relevancy-scorer", {"threshold": 0.7})]
    assert first.values["target_system_prompt"] == "file:prompts/terse.txt"  # as written, for the record
    assert first.where.endswith("sweep.yaml lines 7, 9, 10")
    assert len(sweep.runs()) == 8 and sweep.runs()[:2] == [(first, 0), (first, 1)]


def test_the_baseline_named_by_its_axis_values_or_its_label(tmp_path: Path) -> None:
    axes = BASE + "axes:\n  target: [m:a, m:b]\n  judge_model: [openai/x, openai/y]\n"
    by_values = load_sweep(write(tmp_path, axes + "baseline: {target: m:b, judge_model: openai/x}\n"), root=tmp_path)
    assert by_values.baseline.label == "m:b | openai/x"
    assert [c.baseline for c in by_values.candidates] == [False, False, True, False]
    by_label = load_sweep(write(tmp_path, axes + "baseline: m:a | openai/y\n"), root=tmp_path)
    assert by_label.baseline.values == {"target": "m:a", "judge_model": "openai/y"}


def test_explicit_candidates_with_labels_and_a_marked_baseline(tmp_path: Path) -> None:
    sweep = load_sweep(write(tmp_path, BASE + """\
candidates:
  - label: small
    target: model:openai/gpt-4o-mini
  - label: large
    target: model:openai/gpt-4o
    target_system_prompt: Be brief.
    baseline: true
"""), root=tmp_path)
    assert [(c.label, c.baseline, c.config.target) for c in sweep.candidates] == [
        ("small", False, "model:openai/gpt-4o-mini"), ("large", True, "model:openai/gpt-4o")]
    assert sweep.candidates[1].config.target_system_prompt == "Be brief."
    assert sweep.candidates[0].where.endswith("sweep.yaml line 6")


def test_one_candidate_repeated_is_a_sweep_of_run_to_run_noise(tmp_path: Path) -> None:
    sweep = load_sweep(write(tmp_path, BASE + "  target: m:a\nrepeat: 3\n"), root=tmp_path)
    assert [c.label for c in sweep.candidates] == ["base"] and len(sweep.runs()) == 3


@pytest.mark.parametrize(("text", "expected"), [
    (BASE + "axes:\n  target: [m:a, m:b]\ncolour: red\n",
     ["sweep.yaml line 7: colour: unknown field: remove it or check its spelling"]),
    (BASE + "axes:\n  target: []\n  judge_model: [x, y]\n",
     ["sweep.yaml line 6: axis 'target' has no values: give it one or more, or remove it"]),
    (BASE + "candidates:\n  - {label: a, target: m:a, baseline: true}\n  - label: b\n    target: m:b\n    baseline: true\n",
     ["sweep.yaml line 6: two baselines (", "sweep.yaml line 6; ", "sweep.yaml line 9): a sweep has one"]),
    (BASE + "candidates:\n  - {label: a, target: m:a, baseline: true}\n  - {label: b, target: m:b}\nbaseline: b\n",
     ["two baselines (", "sweep.yaml line 8): a sweep has one"]),
    (BASE + "axes:\n  target: [m:a, m:b]\n  concurrency: [1, 2]\n",
     ["sweep.yaml line 7: 'concurrency' cannot vary between candidates (a run option: the same for every candidate"]),
    (BASE + "axes:\n  target: [m:a, m:b]\n  faithfulness-scorer.threshold: [0.5]\n",
     ["sweep.yaml line 7: 'faithfulness-scorer.threshold': no scorer 'faithfulness-scorer' in base.scorers"]),
    (BASE + "candidates:\n  - target: m:a\n  - target: m:b\n    colour: red\n",
     ["sweep.yaml line 8: 'colour' cannot vary between candidates; what can: target,"]),
    (BASE + "  target: model:openai/x\naxes:\n  target_system_prompt: ['file:missing.txt', Be brief.]\n",
     ["sweep.yaml line 7: 'file:missing.txt': cannot read ", "missing.txt (FileNotFoundError"]),
    (BASE + "axes:\n  target: [m:a, m:b]\n  target_system_prompt: [Be brief., Be kind.]\n",
     ["sweep.yaml line 6: target 'm:a': was given a system prompt, but the function takes no `system_prompt` "
      "parameter: add `system_prompt: str | None = None` to it"]),
    (BASE + "axes:\n  target: [m:a, nowhere_module:fn]\n",
     ["sweep.yaml line 6: target 'nowhere_module:fn': cannot import module 'nowhere_module'"]),
    (BASE + "axes:\n  target: [m:a, m:b]\n  target_api_base: ['http://127.0.0.1:1/v1', 'http://127.0.0.1:2/v1']\n",
     ["sweep.yaml line 7: target_api_base only goes to a `model:` target, and this candidate's target is 'm:a'"]),
    (BASE + "axes:\n  target: [m:a, 7]\n",
     ["sweep.yaml line 6: target: Input should be a valid string"]),
    (BASE.replace("concurrency: 4", "concurrency: 0") + "axes:\n  target: [m:a, m:b]\n",
     ["sweep.yaml line 4: concurrency: Input should be greater than or equal to 1"]),
    (BASE + "  target: m:a\naxes:\n  target: [m:a, m:b]\n",
     ["sweep.yaml line 5: base.target is also an axis or a candidate's value: give it in one place"]),
    (BASE + "axes:\n  target: [m:a, m:b]\ncandidates:\n  - target: m:c\n",
     ["sweep.yaml line 8: give `axes` or `candidates`, not both"]),
    (BASE + "candidates:\n  - {label: same, target: m:a}\n  - {label: same, target: m:b}\n",
     ["sweep.yaml line 7: label 'same' is also that of the candidate at ", "give the candidates `label:`s"]),
    (BASE + "axes:\n  target: [m:a, m:b]\nbaseline: m:c\n",
     ["sweep.yaml line 7: baseline 'm:c' is none of the candidates ('m:a', 'm:b')"]),
    (BASE + "  target: m:a\n",
     ["sweep.yaml line 1: one candidate run once compares nothing"]),
    (BASE + "axes:\n  target: [m:a, m:b\n",
     ["sweep.yaml line 7: not valid YAML"]),
    ("- just\n- a list\n", ["sweep.yaml line 1: a sweep file is a mapping with `base:`"]),
    ("axes:\n  target: [m:a, m:b]\n", ["sweep.yaml line 1: base: Field required"]),
])
def test_a_bad_sweep_file_names_each_problem_by_file_and_line(tmp_path: Path, text: str, expected: list[str]) -> None:
    found = "\n".join(problems(tmp_path, text))
    for part in expected:
        assert part in found, found


def test_every_problem_is_listed_not_only_the_first(tmp_path: Path) -> None:
    found = problems(tmp_path, BASE + "axes:\n  target: []\n  concurrency: [1]\n  nope.x: [1]\n")
    assert [p.split(": ")[0].rsplit(" ", 1)[-1] for p in found] == ["6", "7", "8"], found


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SweepFileError, match=r"nowhere\.yaml: no such file"):
        load_sweep(tmp_path / "nowhere.yaml")


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 3), min_size=1, max_size=3), repeat=st.integers(1, 3), data=st.data())
def test_the_candidates_are_every_combination_once_with_one_baseline(tmp_path_factory: pytest.TempPathFactory,
                                                                      sizes: list[int], repeat: int,
                                                                      data: st.DataObject) -> None:
    if max(sizes) == 1 and repeat == 1:
        repeat = 2  # one candidate once is refused (tested above)
    axes = ["target", "judge_model", "answer-relevancy-scorer.threshold"][: len(sizes)]
    values = {axis: [f"m:v{i}" if axis == "target" else f"j{i}" if axis == "judge_model" else i / 10
                     for i in range(n)] for axis, n in zip(axes, sizes, strict=True)}
    pick = {axis: data.draw(st.sampled_from(vs)) for axis, vs in values.items()}
    text = BASE + "axes:\n" + "".join(f"  {axis}: {vs!r}\n" for axis, vs in values.items()) + f"repeat: {repeat}\n"
    text += "baseline: {" + ", ".join(f"{a}: {v!r}" for a, v in pick.items()) + "}\n"
    root = tmp_path_factory.mktemp("sweep")
    sweep = load_sweep(write(root, text), root=root)
    combos = [dict(c.values) for c in sweep.candidates]
    assert combos == [dict(zip(axes, p, strict=True)) for p in itertools.product(*values.values())]
    assert len({c.label for c in sweep.candidates}) == len(combos)
    assert [c for c in sweep.candidates if c.baseline] == [sweep.baseline] and dict(sweep.baseline.values) == pick
    assert len(sweep.runs()) == len(combos) * repeat


def test_a_long_module_function_label_drops_its_packages_before_anything_else() -> None:
    from evalduck.flows.inputs.sweep_labels import label_of

    assert label_of({"target": "examples.support_bots:faq_bot"}) == "support_bots:faq_bot"
    assert label_of({"target": "m:a", "target_system_prompt": "file:examples/prompts/terse.txt"}) == "m:a | terse.txt"
    assert label_of({"target": "pkg.sub.a_module_with_a_long_name:answer_fn"}) == "...ith_a_long_name:answer_fn"


def test_run_options_over_the_base_apply_to_every_candidate_and_bad_ones_are_named(tmp_path: Path) -> None:
    from evalduck.flows.inputs.sweeps import with_run_options

    sweep = load_sweep(write(tmp_path, BASE + "axes:\n  target: [m:a, m:b]\n"), root=tmp_path)
    faster = with_run_options(sweep, {"concurrency": 32, "judge_rpm": 600})
    assert [(c.config.concurrency, c.config.judge_rpm) for c in faster.candidates] == [(32, 600), (32, 600)]
    assert [c.label for c in faster.candidates] == [c.label for c in sweep.candidates]
    with pytest.raises(SweepFileError) as caught:
        with_run_options(sweep, {"concurrency": 0, "target": "m:c", "colour": "red"})
    assert caught.value.problems == ["option target: not a run option a sweep can set",
                                     "option colour: not a run option a sweep can set"]
    with pytest.raises(SweepFileError) as caught:
        with_run_options(sweep, {"concurrency": 0}, lambda field: "--" + field)
    assert caught.value.problems == ["--concurrency: Input should be greater than or equal to 1"]
