"""A sweep file (docs/sweeps.md): one eval's configuration (``base``) and the candidates to compare on it, either the Cartesian
product of ``axes`` or an explicit ``candidates`` list, each run ``repeat`` times, one of them the ``baseline``.

Why a file of its own and not N run commands: the candidates of one sweep must differ only where the file says
they do (same dataset, scorers, judge and options otherwise), so that their paired comparison means what it
says. Every problem is found before anything runs and named by file and line, as dataset errors are. A sweep given
as data (``SweepSpec``, flows/inputs/sweep_spec.py: the run-sweep deployment's form) gets the same checks, each
problem named by its field instead.

    base:                                  # an EvalConfig: dataset, scorers, judge, run options
      dataset: datasets/demo.jsonl
      scorers: [tone-scorer, answer-relevancy-scorer]
    axes:                                  # or `candidates:`, a list of mappings of the same keys
      target: [model:openai/gpt-4o-mini, model:openai/gpt-4o]
      target_system_prompt: ["file:prompts/terse.txt", "Answer in full sentences."]
      answer-relevancy-scorer.threshold: [0.5, 0.7]    # a scorer's option: <scorer id>.<option>
    repeat: 2                              # runs of each candidate, to see run-to-run noise
    baseline: {target: model:openai/gpt-4o-mini, target_system_prompt: "file:prompts/terse.txt",
               answer-relevancy-scorer.threshold: 0.5}      # or a candidate's label; default: the first
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalduck.errors import EvalduckError
from evalduck.flows.config import EvalConfig, RunOptions
from evalduck.flows.inputs.sweep_labels import FILE_PREFIX, baseline_index, duplicate_labels, label_of
from evalduck.flows.inputs.sweep_spec import AXES, SweepFields, SweepSpec
from evalduck.flows.inputs.targets import TargetError, resolve_target
from evalduck.flows.inputs.yaml_lines import LocatedValue, Where, YamlFileError, read_yaml

__all__ = ("AXES", "Candidate", "Sweep", "SweepFileError", "load_sweep", "sweep_from_data", "sweep_from_spec",
           "with_run_options")

# What only a `model:` target reads: on another target a candidate that varies it is another's twin. (A
# `module:function` target takes a system prompt as its `system_prompt` parameter: flows/inputs/targets.py.)
_MODEL_TARGET_ONLY = ("target_api_base",)


class SweepFileError(EvalduckError, ValueError):
    """A sweep file that cannot be used: every problem found, each naming its file and line."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(dict.fromkeys(problems))  # a base problem is found once per candidate
        super().__init__("\n".join(self.problems))


class _SweepFile(SweepFields):
    """A sweep's shape, its ``base`` a mapping: checked with each candidate's values (``_candidate``), so that a
    problem of a file's base is named by its line."""

    base: dict[str, Any]


@dataclass(frozen=True)
class Candidate:
    """One candidate of a sweep: its label, the values that set it apart, and the eval run it is."""

    label: str
    values: Mapping[str, Any]  # axis (or scorer option) -> value as written in the file
    config: EvalConfig
    where: str  # "sweep.yaml line 12" (or "sweep parameter candidates[1]"): where its values are written
    baseline: bool = False


@dataclass(frozen=True)
class Sweep:
    """A sweep file, checked: its candidates in the order they run, the baseline among them, the runs of each."""

    name: str
    path: str | None  # the sweep file; None: a sweep given as data (sweep_from_spec)
    candidates: tuple[Candidate, ...]
    repeat: int
    axes: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def baseline(self) -> Candidate:
        return next(c for c in self.candidates if c.baseline)

    def runs(self) -> list[tuple[Candidate, int]]:
        """Every run of the sweep, candidate by candidate: (candidate, repeat index from 0)."""
        return [(c, r) for c in self.candidates for r in range(self.repeat)]


def load_sweep(path: str | Path, root: Path | None = None) -> Sweep:
    """The sweep file at ``path``, checked whole. Paths in it (the dataset, ``file:`` prompts) are relative to
    ``root``, the folder the command runs in (default: the working directory), as the CLI's own are.

    Raises:
        SweepFileError: every problem, each with the file and line to edit.
    """
    try:
        located = read_yaml(Path(path))
    except YamlFileError as exc:
        raise SweepFileError([str(exc)]) from None
    return sweep_from_data(located, root)


def sweep_from_spec(spec: SweepSpec | Mapping[str, Any], root: Path | None = None) -> Sweep:
    """A sweep given as data (run_sweep's ``sweep``, the ``run-sweep`` deployment's form), with a file's checks;
    each problem named by its field, ``sweep parameter axes.target[1]: ...``. See ``load_sweep``.

    Raises:
        SweepFileError: every problem, each with the field to edit.
    """
    data = spec.as_data() if isinstance(spec, SweepSpec) else spec
    return sweep_from_data(LocatedValue(label="sweep parameter", data=data, stem="sweep"), root)


def sweep_from_data(located: Where, root: Path | None = None) -> Sweep:
    """A sweep from a parsed file (``read_yaml``) or from data (``sweep_from_spec``); see ``load_sweep``."""
    data = located.data
    if not isinstance(data, Mapping):
        raise SweepFileError([f"{located.where([])}: a sweep file is a mapping with `base:` and `axes:` or "
                              f"`candidates:`, got {type(data).__name__}"])
    try:
        shape = _SweepFile.model_validate(data)
    except ValidationError as exc:
        raise SweepFileError([_pydantic_problem(located, [], err) for err in exc.errors()]) from None
    problems: list[str] = []
    if shape.axes and shape.candidates:
        problems.append(f"{located.where(['candidates'])}: give `axes` or `candidates`, not both")
    for name, values in shape.axes.items():
        if not values:
            problems.append(f"{located.where(['axes', name])}: axis {name!r} has no values: give it one or more, "
                            f"or remove it")
    base = _base(located, shape, problems)
    rows = _rows(located, shape, problems)
    folder = root or Path.cwd()
    candidates = [_candidate(located, folder, base, row, problems) for row in rows]
    problems += duplicate_labels([(c.label, c.where) for c in candidates])
    marked = baseline_index(located, [i for i, c in enumerate(shape.candidates) if c.get("baseline") is True],
                            shape.baseline, [(c.label, c.values) for c in candidates], problems)
    if problems:
        raise SweepFileError(problems)
    if len(candidates) < 2 and shape.repeat < 2:
        raise SweepFileError([f"{located.where([])}: one candidate run once compares nothing: add an axis value or "
                              f"a candidate, or set `repeat:` to 2 or more to see run-to-run noise"])
    final = tuple(dataclasses.replace(c, baseline=i == marked) for i, c in enumerate(candidates))
    return Sweep(name=shape.name or located.stem, path=located.source, candidates=final,
                 repeat=shape.repeat, axes={name: tuple(values) for name, values in shape.axes.items()})


def with_run_options(sweep: Sweep, options: Mapping[str, Any],
                     named: Callable[[str], str] = "option {}".format) -> Sweep:
    """``sweep`` with run ``options`` (the CLI's --concurrency, --runner...) over its base, the same in every
    candidate; a value that is not a run option, or not a valid one, is a problem named ``named(field)``."""
    unknown = [f"{named(key)}: not a run option a sweep can set" for key in options
               if key not in RunOptions.model_fields or key in AXES or key in ("name", "resume", "db")]
    if unknown:
        raise SweepFileError(unknown)
    try:
        candidates = tuple(dataclasses.replace(c, config=EvalConfig.model_validate(
            {**c.config.model_dump(), **options})) for c in sweep.candidates)
    except ValidationError as exc:
        raise SweepFileError([f"{named(str(e['loc'][0]))}: {str(e['msg']).removeprefix('Value error, ')}"
                              for e in exc.errors()]) from None
    return dataclasses.replace(sweep, candidates=candidates)


def _pydantic_problem(located: Where, prefix: Sequence[str | int], err: Mapping[str, Any]) -> str:
    loc = [*prefix, *err["loc"]]
    path = ".".join(str(part) for part in loc) or "the file"
    message = str(err["msg"]).removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        message = "unknown field: remove it or check its spelling"
    return f"{located.where(loc)}: {path}: {message}"


def _base(located: Where, shape: _SweepFile, problems: list[str]) -> dict[str, Any]:
    """The base config's fields, its scorers as {id, options} mappings (so a scorer option axis can set one)."""
    base = dict(shape.base)
    for axis in AXES:
        if axis in base and (axis in shape.axes or any(axis in c for c in shape.candidates)):
            problems.append(f"{located.where(['base', axis])}: base.{axis} is also an axis or a candidate's value: "
                            f"give it in one place")
    scorers = base.get("scorers")
    if isinstance(scorers, list):
        base["scorers"] = [{"id": s} if isinstance(s, str) else s for s in scorers]
    return base


Row = tuple[str, dict[str, Any], dict[str, list[str | int]]]  # where, values, each value's path in the file


def _rows(located: Where, shape: _SweepFile, problems: list[str]) -> list[Row]:
    """Each candidate's values, where they are written, and each value's path (for line numbers)."""
    base_ids = {s if isinstance(s, str) else s.get("id") for s in shape.base.get("scorers") or []
                if isinstance(s, (str, Mapping))}
    for name in shape.axes:
        _check_key(located, name, ["axes", name], base_ids, problems)
    for i, entry in enumerate(shape.candidates):
        for name in entry:
            if name not in ("label", "baseline"):
                _check_key(located, name, ["candidates", i, name], base_ids, problems)
    if shape.candidates:
        return [(located.where(["candidates", i]), {k: v for k, v in c.items() if k != "baseline"},
                 {k: ["candidates", i, k] for k in c}) for i, c in enumerate(shape.candidates)]
    names = list(shape.axes)
    rows = []
    for picks in itertools.product(*(range(len(shape.axes[n])) for n in names)):
        values = {n: shape.axes[n][i] for n, i in zip(names, picks, strict=True)}
        rows.append((located.where_all([["axes", n, i] for n, i in zip(names, picks, strict=True)]), values,
                     {n: ["axes", n, i] for n, i in zip(names, picks, strict=True)}))
    return rows or [(located.where(["base"]), {}, {})]


def _check_key(located: Where, name: str, path: list[str | int], base_ids: set[Any],
               problems: list[str]) -> None:
    if name in AXES:
        return
    scorer, dot, option = name.rpartition(".")
    if dot and scorer in base_ids and option:
        return
    if dot and scorer:
        problems.append(f"{located.where(path)}: {name!r}: no scorer {scorer!r} in base.scorers (a scorer option "
                        f"is written <scorer id>.<option>)")
        return
    run_option = " (a run option: the same for every candidate, set it in base)" if name in RunOptions.model_fields else ""
    problems.append(f"{located.where(path)}: {name!r} cannot vary between candidates{run_option}; what can: "
                    f"{', '.join(AXES)}, or a scorer's option as <scorer id>.<option>")


def _candidate(located: Where, root: Path, base: Mapping[str, Any], row: Row, problems: list[str]) -> Candidate:
    """The candidate's EvalConfig: base with its values (a prompt read from its ``file:``), validated."""
    where, values, paths = row
    values = dict(values)
    label = values.pop("label", None)
    fields = dict(base)
    scorers = [dict(s, options=dict(s.get("options") or {})) if isinstance(s, Mapping) else s
               for s in fields.get("scorers") or []]
    for name, value in values.items():
        if name in AXES:
            fields[name] = _prompt_file(root, located.where(paths[name]), value, problems) if name == "target_system_prompt" else value
        else:
            scorer, _, option = name.rpartition(".")
            for spec in scorers:
                if isinstance(spec, dict) and spec.get("id") == scorer:
                    spec["options"][option] = value
    if scorers:
        fields["scorers"] = scorers
    target = fields.get("target")
    for name in _MODEL_TARGET_ONLY:
        if name in values and not (isinstance(target, str) and target.startswith("model:")):
            problems.append(f"{located.where(paths[name])}: {name} only goes to a `model:` target, and this "
                            f"candidate's target is {target!r}: it would run exactly as without it (give a "
                            f"`module:function` target what it needs another way, e.g. one function per variant)")
    if isinstance(target, str) and target and not target.startswith("model:"):
        _check_callable(target, fields.get("target_system_prompt"),
                        located.where(paths["target"] if "target" in values else ["base", "target"]), problems)
    try:
        config = EvalConfig.model_validate(fields)
    except ValidationError as exc:
        for err in exc.errors():
            first = err["loc"][0] if err["loc"] else None
            at = located.where(paths[first]) if first in values else located.where(["base", *err["loc"]])
            problems.append(f"{at}: "
                            f"{'.'.join(map(str, err['loc']))}: {str(err['msg']).removeprefix('Value error, ')}")
        config = EvalConfig.model_construct(**fields)
    return Candidate(label=str(label) if label is not None else label_of(values), values=values, config=config,
                     where=where)


def _check_callable(target: str, system_prompt: Any, where: str, problems: list[str]) -> None:
    """A `module:function` target imports, and takes the candidate's system prompt if it has one: found here,
    before any candidate runs, not when its turn comes."""
    try:
        resolve_target(target, system_prompt=system_prompt if isinstance(system_prompt, str) else None)
    except TargetError as exc:
        problems.append(f"{where}: {exc}")


def _prompt_file(root: Path, where: str, value: Any, problems: list[str]) -> Any:
    if not isinstance(value, str) or not value.startswith(FILE_PREFIX):
        return value
    path = root / value.removeprefix(FILE_PREFIX)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{where}: {value!r}: cannot read {path} ({type(exc).__name__}: {exc.strerror or exc})")
        return value
