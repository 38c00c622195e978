"""A run's preflight (``evalduck run --dry-run``, ``run_evals(..., dry_run=True)``): its inputs loaded and checked as
``prepare_run`` checks them, then, per scorer and for the target, the requests the run would make, how many the
step cache answers, their tokens and their cost. Nothing is sent, nothing is stored: the results file is only
read (when it exists), the cache folder only read (flows/run/preflight_walk.py), and no flow run is made.
Tokens and prices: flows/run/preflight_cost.py; what each number means: docs/cost.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, computed_field

from evalduck.flows.config import DEFAULT_SCORERS, RunOptions
from evalduck.flows.inputs.datasets import Dataset, DatasetItem
from evalduck.flows.inputs.registry import build_scorers
from evalduck.flows.inputs.targets import Target, resolve_target
from evalduck.flows.project.defaults import default_cache_dir
from evalduck.flows.run.preflight_cost import (
    DEFAULT_PROMPT,
    Completion,
    TokenCounter,
    completion_history,
    cost,
    prompt_history,
    target_history,
)
from evalduck.flows.run.preflight_walk import Ask, CachedResults, schema_text, scorer_input, target_messages, walk_cell
from evalduck.flows.run.prepare import CacheDirError, _check_outputs, load_data
from evalduck.flows.store import Store, StoreError, check_resume_dataset, default_db_path
from evalduck.flows.store.target import parse_target
from evalduck.scorers import Scorer, Step

__all__ = ("Preflight", "PreflightLine", "preflight")

Price = Literal["priced", "unknown price", "no model"]
_UNKNOWN = object()  # an item's output the run has yet to get from its target


class PreflightLine(BaseModel):
    """The target's or one scorer's requests. Tokens and cost are those of the requests to send (not cached)."""

    name: str  # "target" or the scorer's id
    kind: Literal["target", "judge", "code", "skipped"]
    model: str | None = None
    requests: int = 0  # every request the run makes for it, cached or not (a repair request is not foreseen)
    cached: int = 0  # of those, answered by the step cache (exact where the key can be computed: docs/cost.md)
    prompt_tokens: int | None = None
    prompts_estimated: int = 0  # requests to send whose prompt cannot be built before the run (estimated)
    completion_tokens: int | None = None
    completion_source: str | None = None
    cost_low: float | None = None  # USD; None: no price (see ``price``)
    cost_high: float | None = None
    price: Price = "no model"
    note: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def to_send(self) -> int:
        return self.requests - self.cached


class Preflight(BaseModel):
    """What a run would do and cost, found without running it."""

    dataset: str | None
    items: int  # items the run would work on (a resume: those with a cell to compute)
    cells: int
    cache_dir: str
    refresh: bool
    db: str
    resume: str | None = None
    lines: list[PreflightLine]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def requests(self) -> int:
        return sum(line.requests for line in self.lines)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cached(self) -> int:
        return sum(line.cached for line in self.lines)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost_low(self) -> float:
        """The priced lines' low costs summed (``unknown_price`` names what it leaves out)."""
        return sum(line.cost_low or 0.0 for line in self.lines)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost_high(self) -> float:
        return sum(line.cost_high or 0.0 for line in self.lines)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unknown_price(self) -> list[str]:
        """Models with requests to send that litellm cannot price: the totals leave them out."""
        return sorted({line.model for line in self.lines if line.price == "unknown price" and line.to_send
                       and line.model})


def preflight(*, data: Any, scorers: Sequence[Any], target: Any, options: RunOptions) -> Preflight:
    """Load and check what the run would (dataset, scorers, target, options, cache folder, results file, the
    resumed run), then count its requests. Raises the run's own errors (EvalduckError), before anything else."""
    o = options
    dataset = load_data(data)
    built, skipped = build_scorers(scorers or list(DEFAULT_SCORERS), judge_model=o.judge_model,
                                   judge_api_base=o.judge_api_base, judge_timeout=o.judge_timeout_s)
    built = [s.with_source() for s in built]
    tgt = resolve_target(target, system_prompt=o.target_system_prompt, api_base=o.target_api_base,
                         timeout=o.target_timeout_s)
    _check_outputs(dataset, tgt, built)
    if o.runner == "dask":  # a scorer or target that cannot reach a worker stops here, named
        from evalduck.flows.engine.dispatch import portables

        portables(built, tgt)
    folder = _cache_folder(o.cache_dir)
    db = _results_file(o.db)
    ids = [s.id for s in built] + [sk.scorer_id for sk in skipped]
    todo = _todo(o, dataset, ids) if o.resume else None

    def wanted(item_id: str, scorer_id: str) -> bool:
        return todo is None or (item_id, scorer_id) in todo

    items = [i for i in dataset.items if any(wanted(i.item_id, s.id) for s in built)]
    cache = CachedResults(folder, refresh=o.refresh)
    db_file = db if isinstance(db, Path) else None
    lines: list[PreflightLine] = []
    outputs: dict[str, Any] = {i.item_id: i.output for i in items}
    if tgt.calls:
        lines.append(_target_line(tgt, items, cache, outputs, db_file))
    for scorer in built:
        cells = [i for i in items if wanted(i.item_id, scorer.id)]
        lines.append(_scorer_line(scorer, cells, outputs, cache, scorer.samples or o.judge_samples, db_file)
                     if scorer.is_judge else PreflightLine(name=scorer.id, kind="code"))
    lines.extend(PreflightLine(name=sk.scorer_id, kind="skipped", note=sk.reason) for sk in skipped)
    return Preflight(dataset=dataset.source, items=len(items), cells=sum(wanted(i.item_id, s.id) for i in items
                                                                         for s in built),
                     cache_dir=str(folder), refresh=o.refresh, db=str(db), resume=o.resume, lines=lines)


def _cache_folder(configured: str | None) -> Path:
    """The step cache folder, checked as ``prepare.cache_folder`` checks it but neither made nor written: an
    existing folder must be writable, else the nearest folder above it that exists."""
    folder = (Path(configured) if configured else default_cache_dir()).absolute()
    probe = folder
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise CacheDirError(f"step cache folder {folder} cannot be written ({probe} is not a writable folder). "
                            "Choose another --cache-dir (or EVALDUCK_CACHE_DIR).")
    return folder


def _results_file(configured: str | None) -> Path | str:
    """The results file (a shared store: its label), checked as ``Store`` checks it; never opened here."""
    target = parse_target(configured if configured is not None else default_db_path())
    if target.path is None:
        return str(configured)
    if not target.path.parent.is_dir():
        raise StoreError(f"{target.path}: folder {target.path.parent} does not exist")
    return target.path


def _reader(db: str | None) -> Store:
    """The results file opened read-only, never created nor migrated (``Store.__init__`` would do both)."""
    store = Store.__new__(Store)
    store.target = parse_target(db if db is not None else default_db_path())
    store.path = store.target.path if store.target.path is not None else store.target.label
    store.lock_timeout, store.read_only, store.left_running, store.interrupted = None, True, [], []
    if store.target.path is not None and not store.target.path.is_file():
        raise StoreError(f"{store.path}: no results file, so no run to resume")
    store.migrated_from = store._open_read_only()
    return store


def _todo(o: RunOptions, dataset: Dataset, scorer_ids: list[str]) -> frozenset[tuple[str, str]]:
    """A resume's cells, as ``prepare_run`` finds them: the run's missing or errored cells."""
    assert o.resume is not None
    store = _reader(o.db)
    run_id = store.resolve_run(o.resume)
    check_resume_dataset(store, run_id, dataset.source, dataset.hash, [i.item_id for i in dataset.items])
    every = frozenset((i.item_id, sid) for i in dataset.items for sid in scorer_ids)
    return every - store.completed_cells(run_id)


def _priced(line: PreflightLine, model: str, prompt: int, completion: Completion) -> PreflightLine:
    """``line`` with its tokens and cost: low prices the requests to send with the low completion estimate,
    high with the high one (docs/cost.md)."""
    n = line.to_send
    line.model, line.prompt_tokens = model, prompt
    line.completion_tokens, line.completion_source = round(n * completion.mean), completion.source
    low, high = cost(model, prompt, round(n * completion.low)), cost(model, prompt, round(n * completion.high))
    line.price = "priced" if low is not None else "unknown price"
    line.cost_low, line.cost_high = (0.0, 0.0) if n == 0 else (low, high)
    return line


def _target_line(tgt: Target, items: list[DatasetItem], cache: CachedResults, outputs: dict[str, Any],
                 db: Path | None) -> PreflightLine:
    """The target's calls (one per item), its cached answers read into ``outputs`` (else unknown)."""
    sent: list[list[dict[str, Any]]] = []
    answers: list[Any] = []
    for item in items:
        found = cache.get(tgt.cache_key(item))
        if isinstance(found, dict) and "output" in found:
            outputs[item.item_id] = found["output"]
            answers.append(found["output"])
            continue
        outputs[item.item_id] = _UNKNOWN
        if tgt.kind == "model":
            sent.append(target_messages(tgt, item))
    line = PreflightLine(name="target", kind="target", requests=len(items), cached=len(answers))
    if tgt.kind != "model" or tgt.settings is None:
        line.note = f"{tgt.label}: calls to your function (what it asks is not counted)"
        return line
    counter = TokenCounter(tgt.settings.model)
    return _priced(line, tgt.settings.model, counter.total(sent),
                   target_history(db, tgt.label, counter, answers))


def _scorer_line(scorer: Scorer, items: list[DatasetItem], outputs: dict[str, Any], cache: CachedResults,
                 samples: int, db: Path | None) -> PreflightLine:
    """A judge scorer's requests: every sample of every cell walked (flows/run/preflight_walk.py)."""
    sampled = [scorer.sampled(i) for i in range(samples)]
    asks: list[Ask] = []
    for item in items:
        output = outputs[item.item_id]
        run = None
        if output is not _UNKNOWN:
            try:
                run = scorer_input(item, output)
            except Exception:  # noqa: BLE001 - the cell's error in the run: nothing is asked
                continue
        for one in sampled:
            asks.extend(walk_cell(one, run, cache))
    judge_steps = [s for s in scorer.steps if s.is_judge]
    model = judge_steps[0].judge.model if judge_steps[0].judge is not None else "?"
    line = PreflightLine(name=scorer.id, kind="judge", requests=len(asks), cached=sum(a.cached for a in asks))
    counter = TokenCounter(model)
    prompt, estimated = _prompt_tokens(judge_steps, asks, counter, lambda: prompt_history(db, scorer.id, model))
    line.prompts_estimated = estimated
    return _priced(line, model, prompt, completion_history(db, scorer.id, model, len(judge_steps)))


def _prompt_tokens(steps: list[Step], asks: list[Ask], counter: TokenCounter,
                   history: Callable[[], dict[str, list[str]]]) -> tuple[int, int]:
    """The prompt tokens of the requests to send, and how many of them were estimated. A prompt that can be built
    is counted (with its answer schema); one that cannot is its step's mean: over the prompts of that step built
    here, else over the stored prompts of that step (the results file), else the first judge step's mean here
    with this step's instructions in place of its own, else ``DEFAULT_PROMPT``."""
    total, estimated, first = 0, 0, None  # first: the first judge step's mean user part, once known
    stored: dict[str, list[str]] | None = None
    for step in steps:
        mine = [a for a in asks if a.step.name == step.name]
        built = [a.messages for a in mine if a.messages is not None]
        sent = [a.messages for a in mine if not a.cached and a.messages is not None]
        unbuilt = sum(1 for a in mine if not a.cached and a.messages is None)
        schema, system = counter.text(schema_text(step)), counter.messages(_system(step))
        total += counter.total(sent) + schema * len(sent)
        mean = counter.mean(built)
        if mean is None and unbuilt:
            stored = history() if stored is None else stored
            mean = counter.mean([[*_system(step), {"role": "user", "content": t}] for t in stored.get(step.name, [])])
        if mean is None and first is not None:
            mean = first + system
        if first is None and mean is not None:
            first = mean - system
        total += round(unbuilt * ((mean if mean is not None else DEFAULT_PROMPT) + schema))
        estimated += unbuilt
    return total, estimated


_SYSTEMS: dict[str, list[dict[str, str]]] = {}


def _system(step: Step) -> list[dict[str, str]]:
    """A step's system message alone (one list per text, so the counter counts it once)."""
    return _SYSTEMS.setdefault(step.instructions, [{"role": "system", "content": step.instructions}])
