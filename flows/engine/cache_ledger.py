"""Why a step's result came from the cache or was computed (``--explain-cache``): each step's last key per
item, kept in compact parts, so a miss can name what changed since (``code (my_evals.py)``, ``params``,
``output``...).

Where: one small JSON file per step beside the cached results (``<cache dir>/keys/<step>.json``), not a table
in the results store. The keys belong to the cache, not to the runs: a cleared cache folder clears them too
(its misses are then rightly "never computed before"), a second results file over the same cache explains the
same keys, and the store (its schema, migrations, shared DuckLake backend) gains no table nor contract.

What is kept is compact: per item the key and a 16-hex digest of each part that varies by item (the run's
fields, each earlier step's result, the score), and per step the digests of its configuration (version,
params, code, judge) once, with the code's files and their digests (``SourceDigest.files``), so a changed
code digest names the file. Never a value itself.

Recorded at every run, with or without ``--explain-cache`` (so the run in question explains itself against the
one before, whichever flags that had): a hit or a miss whose key is the item's last costs one dict lookup; a
changed key costs the parts' digests, next to a step that runs anyway (docs/benchmarks.md). A file that cannot
be read or written costs its explanations, never the run (a warning). Two runs sharing a cache folder at
the same time merge their items at the write; the later write wins an item both saw.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalduck.flows.inputs.datasets import DatasetItem
from evalduck.flows.inputs.targets import Target
from evalduck.scorers import PREBUILT, ScorerInput, Step, StepContext, canonical_json
from evalduck.scorers._cache_key import KEY_FORMAT_VERSION, SourceDigest, module_digest

__all__ = ("CacheLedger", "CacheLine", "StepBook", "cache_summary", "changed_parts", "changed_files", "own_parts",
           "run_parts", "step_files", "step_parts", "target_parts", "FOLDER")

logger = logging.getLogger("evalduck.cache")

FOLDER = "keys"  # under the step cache folder
_FORMAT = 1
NEVER = "never computed before"
SAME_KEY = "same key, not in the cache"
CHUNK = "same key, its chunk changed"  # a code step's chunk is cached whole: another of its items changed
REFRESH = "--no-cache"
UNCACHED = "not cached: recomputed each run"  # a judge scorer's code steps (flows/engine/tasks.py code_chunk_task)

Parts = dict[str, str]


def _short(value: Any) -> str:
    """16 hex of a value's digest; a string's own bytes (most run fields), anything else its canonical JSON."""
    text = "s" + value if isinstance(value, str) else "null" if value is None else canonical_json(value, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def own_parts(step: Step, components: Mapping[str, Any]) -> Parts:
    """The parts of a step's key that are the same for every item of a run."""
    c = components
    return {"key_format": str(KEY_FORMAT_VERSION), "version": _short(c["scorer_version"]), "params": _short(c["params"]),
            "code": c.get("code") or "-", "judge": _short(c.get("judge"))}


def run_parts(run: ScorerInput) -> Parts:
    """The parts of the run's fields (shared by every step of the item)."""
    return {name: _short(value) for name, value in run.fields_for_key().items()}


def step_parts(step: Step, ctx: StepContext, *, own: Parts | None = None, run: Parts | None = None) -> tuple[Parts, Parts]:
    """A step's key components as digests: (the step's own: the same for every item of a run, the item's).
    ``own`` and ``run``: those parts computed already (``CacheLedger.parts`` keeps them)."""
    c = step.key_components(ctx)
    item = dict(run_parts(ctx.run) if run is None else run)
    item.update({f"earlier_results.{name}": _short(value) for name, value in c["earlier_results"].items()})
    if c["score"] is not None:
        item["score"] = _short(c["score"])
    return (own_parts(step, c) if own is None else own), item


def target_parts(target: Target, item: DatasetItem) -> tuple[Parts, Parts]:
    """The target's key components as digests, as ``step_parts``."""
    c = target.key_components(item)
    identity = dict(c["target"])
    code = identity.pop("source_sha256", None)
    own = {"key_format": str(c["format"]), "target": _short(identity), "code": code or "-"}
    return own, {"input": _short(c["input"]), "request_context": _short(c["request_context"])}


def changed_parts(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """The parts whose digest differs (or that one side lacks), in ``new``'s order then ``old``'s."""
    return [name for name in dict.fromkeys([*new, *old]) if old.get(name) != new.get(name)]


def _shown(path: str) -> str:
    """A file as a person knows it: relative to the working folder when inside it, else its name."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else Path(path).name
    except (OSError, ValueError):
        return Path(path).name


def changed_files(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """The files (path -> sha256) edited, added or dropped between two code digests, as shown to a person."""
    return [_shown(path) for path in sorted(set(old) | set(new)) if old.get(path) != new.get(path)]


def step_files(step: Step) -> dict[str, str]:
    """The files behind ``step.code`` (path -> sha256): its module closure, found again; for a prebuilt scorer
    that of its factory's module (what ``_declare`` keys it on); empty when they cannot be found."""
    found: list[SourceDigest | None] = [step.source()]
    prebuilt = PREBUILT.get(step.scorer_id)
    if prebuilt is not None:
        found.append(module_digest(prebuilt.factory.__module__))
    return next((dict(f.files) for f in found if f is not None and f.digest == step.code), {})


@dataclass
class CacheLine:
    """One step's row of the explanation: its hits, and its misses counted by what changed."""

    step: str
    hits: int = 0
    misses: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "hits": self.hits, "misses": sum(self.misses.values()),
                "why": dict(self.misses.most_common())}


class StepBook:
    """One step's (or the target's) last key per item, read from its file and written back with this run's."""

    def __init__(self, path: Path, label: str, files: Callable[[], Mapping[str, str]], *, refresh: bool) -> None:
        self.path, self.files_now, self.refresh = path, files, refresh
        self.line = CacheLine(label)
        data = _load(path)
        self.items: dict[str, list[Any]] = data.get("items", {})  # item id -> [key, config digest, item parts]
        self.configs: dict[str, Parts] = data.get("configs", {})  # config digest -> the step's own parts
        self.files: dict[str, dict[str, str]] = data.get("files", {})  # code digest -> its files
        self.touched: set[str] = set()
        self._own: Parts | None = None  # the step's own parts last seen, and their digest
        self._config = ""

    def note(self, item_id: str, key: str, hit: bool, parts: Callable[[], tuple[Parts, Parts]], *,
             chunk_changed: bool = False) -> str | None:
        """Count one item's outcome and keep its key; the miss's reason (None for a hit). ``chunk_changed``:
        the item's chunk (code-only scorers are cached by chunk) holds an item whose key changed."""
        last = self.items.get(item_id)
        reason: str | None = None
        if last is not None and last[0] == key:
            if not hit:
                reason = REFRESH if self.refresh else CHUNK if chunk_changed else SAME_KEY
        else:
            own, item = parts()
            if own is not self._own:  # the same dict for every item of a run (CacheLedger.parts)
                self._own, self._config = own, _short(own)
                self.configs[self._config] = own
            config = self._config
            if own["code"] not in self.files:
                self.files[own["code"]] = dict(self.files_now())
            if not hit:
                reason = NEVER if last is None else self._why(last, own, item)
            self.items[item_id] = [key, config, item]
            self.touched.add(item_id)
        if reason is None:
            self.line.hits += 1
        else:
            self.line.misses[reason] += 1
        return reason

    def changed(self, item_id: str, key: str) -> bool:
        """The item's key differs from its last (or it has none)."""
        last = self.items.get(item_id)
        return last is None or last[0] != key

    def _why(self, last: list[Any], own: Parts, item: Parts) -> str:
        old_own = self.configs.get(last[1])
        if old_own is None:  # the file lost it (a hand edit): what is known is the key changed
            return "key"
        names = changed_parts({**old_own, **last[2]}, {**own, **item})
        if not names:
            return "key"
        shown = []
        for name in names:
            if name == "code":
                files = changed_files(self.files.get(old_own["code"], {}), self.files.get(own["code"], {}))
                name = f"code ({', '.join(files)})" if files else "code"
            shown.append(name)
        return ", ".join(shown)

    def save(self) -> None:
        """This run's items over what the file holds now (another run may have written it meanwhile)."""
        if not self.touched:
            return
        data = _load(self.path)
        items = {**data.get("items", {}), **{i: self.items[i] for i in self.touched}}
        configs = {**data.get("configs", {}), **self.configs}
        configs = {c: configs[c] for c in {entry[1] for entry in items.values()} if c in configs}
        files = {**data.get("files", {}), **self.files}
        files = {d: files[d] for d in {own["code"] for own in configs.values()} if d in files}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        part = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:12]}")  # a shared folder: any machine
        part.write_text(json.dumps({"format": _FORMAT, "label": self.line.step, "items": items, "configs": configs,
                                    "files": files}, separators=(",", ":")), encoding="utf-8")
        os.replace(part, self.path)


def cache_summary(line: Mapping[str, Any]) -> str:
    """One step's row as text (the flow's log line): ``limited.generate_score 0 hit 4 miss: code (my_evals.py) 4``."""
    why = ", ".join(f"{reason} {count}" for reason, count in line["why"].items())
    return f"{line['step']} {line['hits']} hit {line['misses']} miss" + (f": {why}" if why else "")


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.warning("step cache record %s cannot be read (%s): its steps' misses are explained as never "
                       "computed before", path, exc)
        return {}
    return data if isinstance(data, dict) and data.get("format") == _FORMAT else {}


def _file_name(label: str) -> str:
    """A file name for any label: its safe characters, and a digest so two labels never share one."""
    return f"{re.sub(r'[^A-Za-z0-9._-]', '_', label)[:80]}-{_short(label)[:8]}.json"


class CacheLedger:
    """A run's books, one per step (and the target), in the run's order; ``save`` writes them all."""

    def __init__(self, cache_dir: Path, *, refresh: bool) -> None:
        self.folder = cache_dir / FOLDER
        self.refresh = refresh
        self.books: dict[str, StepBook] = {}
        self.uncached: dict[str, CacheLine] = {}
        self._own: dict[str, Parts] = {}  # step label -> its own parts (one step object per label in a run)
        self._runs: dict[int, tuple[ScorerInput, Parts]] = {}  # id(run) -> the run (kept: ids stay unique), its parts

    def book(self, label: str, files: Callable[[], Mapping[str, str]]) -> StepBook:
        found = self.books.get(label)
        if found is None:
            found = self.books[label] = StepBook(self.folder / _file_name(label), label, files, refresh=self.refresh)
        return found

    def parts(self, step: Step, ctx: StepContext) -> tuple[Parts, Parts]:
        """``step_parts``, with the step's own parts and each item's run parts computed once per run."""
        own = self._own.get(step.label)
        if own is None:
            own = self._own[step.label] = own_parts(step, step.key_components(ctx))
        seen = self._runs.get(id(ctx.run))
        if seen is None:
            seen = self._runs[id(ctx.run)] = (ctx.run, run_parts(ctx.run))
        return step_parts(step, ctx, own=own, run=seen[1])

    def step(self, step: Step) -> StepBook:
        return self.book(step.label, lambda: step_files(step))

    def target(self, target: Target) -> StepBook:
        return self.book("target", lambda: dict(target.source.files) if target.source is not None else {})

    def not_cached(self, label: str, count: int) -> None:
        """``count`` items of a step that is never cached, computed."""
        line = self.uncached.setdefault(label, CacheLine(label))
        line.misses[UNCACHED] += count

    def save(self) -> None:
        for book in self.books.values():
            try:
                book.save()
            except Exception as exc:  # noqa: BLE001 - an explanation lost never fails the run
                logger.warning("could not write the step cache record %s (%s): the next run's misses are "
                               "explained against an older one", book.path, exc)

    def lines(self, order: Iterable[str]) -> list[dict[str, Any]]:
        """The explanation, one row per step in ``order`` (the target first, then each scorer's steps)."""
        known = {label: book.line for label, book in self.books.items()} | self.uncached
        return [known[label].as_dict() for label in order if label in known]
