"""What a run would ask, found without asking (``--dry-run``, flows/run/preflight.py): each item's walk through a
judge scorer's steps as the engine walks it (flows/engine/steps.py), with the step cache read instead of the
judge. A judge step whose key can be computed (its context is known) is looked up in the run's cache folder,
where Prefect keeps one JSON record per key (flows/engine/tasks.py ``cache_kwargs``); a hit's result is read, so
the next step's context, and key, is known too. A code step of a judge scorer is run here, as the engine runs it
(it is deterministic and asks nothing). Past the first step that would be asked, contexts are unknown: the
steps after it are counted as requests, uncached, with no prompt.
"""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalduck.flows.engine.tasks import NOT_SCORABLE
from evalduck.flows.inputs.datasets import DatasetItem
from evalduck.flows.inputs.targets import Target
from evalduck.scorers import NotScorable, Scorer, ScorerInput, Step, StepContext
from evalduck.scorers._judge import output_schema

__all__ = ("Ask", "CachedResults", "schema_text", "scorer_input", "target_messages", "walk_cell")


class CachedResults:
    """The run's step cache folder, read: a key's stored result, or None when Prefect would compute it (no
    record, an unreadable or expired one, or ``refresh``: --no-cache). Nothing is written, not even the folder."""

    def __init__(self, folder: Path, *, refresh: bool) -> None:
        self.folder, self.refresh = folder, refresh
        self.usable = not refresh and folder.is_dir()
        self._base = str(folder) + os.sep  # a key's record is <folder>/<key> (pathlib per key costs more than the read)

    def get(self, key: str) -> Any | None:
        if not self.usable:
            return None
        try:
            with open(self._base + key, "rb") as file:
                record = json.loads(file.read())
            expiration = record["metadata"].get("expiration")
            if expiration is not None and datetime.fromisoformat(expiration) <= datetime.now(timezone.utc):
                return None
            result = record["result"]
            return json.loads(result) if isinstance(result, (str, bytes)) else result
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # what Prefect's ResultStore.exists says of such a record: not there


@dataclass
class Ask:
    """One request a judge step would send: cached or not, and its messages when they can be built now."""

    step: Step
    cached: bool
    messages: list[dict[str, str]] | None = None


def scorer_input(item: DatasetItem, output: Any) -> ScorerInput:
    """The item as its scorers see it (flows/engine/plan.py ``ItemState.scorer_input``)."""
    return ScorerInput(input=item.input, output=output, ground_truth=item.ground_truth,
                       request_context=item.request_context, context=item.context,
                       expected_tool=item.expected_tool, expected_tool_order=item.expected_tool_order)


def target_messages(target: Target, item: DatasetItem) -> list[dict[str, str]]:
    """What a ``model:`` target sends for the item (``Target.messages``, what its call sends)."""
    return target.messages(item)


def _run_code(step: Step, ctx: StepContext) -> Any:
    """A code step's result here; an async step's coroutine is not run (its result stays unknown)."""
    assert step.fn is not None
    result = step.fn(ctx)
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if close is not None:
            close()
        raise LookupError(step.label)
    return result


def walk_cell(scorer: Scorer, run: ScorerInput | None, cache: CachedResults) -> list[Ask]:
    """The requests one sample of one cell makes (``run`` None: the item's output is not known yet). A step that
    raises here (NotScorable, a bad input) ends the cell, as it would in the run: nothing after it is asked."""
    asks: list[Ask] = []
    results: dict[str, Any] = {}
    score: float | None = None
    known = run is not None
    for step in scorer.steps:
        if not known:
            if step.is_judge:
                asks.append(Ask(step, cached=False))
            continue
        assert run is not None
        ctx = scorer.context_for(step.name, run, results, score)
        try:
            if not step.is_judge:
                result = _run_code(step, ctx)
            else:
                result = _judge_step(step, ctx, cache, asks)
                if result is _ASKED:
                    known = False
                    continue
        except LookupError:
            known = False
            continue
        except NotScorable:
            return asks
        except Exception:  # noqa: BLE001 - the cell's error in the run: it asks nothing more
            return asks
        if isinstance(result, dict) and NOT_SCORABLE in result:
            return asks
        results[step.name] = result
        if step.name == "generate_score":
            try:
                score = float(result)
            except (TypeError, ValueError):
                return asks
    return asks


_ASKED = object()  # a judge step that would be asked: its result is unknown


def _judge_step(step: Step, ctx: StepContext, cache: CachedResults, asks: list[Ask]) -> Any:
    """A judge step's result from its shortcut or the cache, else ``_ASKED`` (the request noted in ``asks``)."""
    jp = step.judge_prompt
    assert jp is not None
    if jp.shortcut is not None:
        shortcut = jp.shortcut(ctx)
        if shortcut is not None:
            return shortcut  # answered without a request (and cached as such: nothing to count)
    messages = [{"role": "system", "content": step.instructions}, {"role": "user", "content": jp.prompt(ctx)}]
    found = cache.get(step.cache_key(ctx))
    asks.append(Ask(step, cached=found is not None, messages=messages))
    if found is None:
        return _ASKED
    if NOT_SCORABLE in found:
        return found
    return found.get("result")


def schema_text(step: Step) -> str:
    """A judge step's answer schema as sent (``response_format``): providers count it in the prompt."""
    model = step.judge_prompt.output_model if step.judge_prompt is not None else None
    return json.dumps(output_schema(model)) if model is not None else ""
