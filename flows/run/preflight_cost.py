"""Tokens and prices for a preflight (flows/run/preflight.py): litellm's token counter on the messages a run
would send, the completion tokens a scorer's judge gave before (the results file's history), and litellm's
price map. litellm is imported here only, when a preflight counts (its import costs seconds).

Counting every prompt of a large run one by one would take longer than the rest of the preflight (~0.1 ms a
prompt), so each step's prompts are counted exactly up to ``EXACT`` of them (spread over the run), and the rest
from their length at the tokens per character those showed: the same count within a fraction of a percent on
prompts of one template.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ("DEFAULT_COMPLETION", "DEFAULT_PROMPT", "EXACT", "Completion", "TokenCounter", "completion_history",
           "cost", "prompt_history", "target_history")

EXACT = 100  # prompts per step counted exactly; the rest by length
DEFAULT_COMPLETION = (50, 150, 500)  # tokens per request (low, estimate, high) when the results file has no history
DEFAULT_PROMPT = 500  # tokens of a prompt that cannot be built and has no measure at all
HISTORY_CELLS = 2000  # the newest stored cells read for a scorer's history

Messages = list[dict[str, Any]]


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _chars(messages: Messages) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages)


class TokenCounter:
    """litellm's ``token_counter`` for one model (its tokenizer: the model's, else litellm's default)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._count = _litellm().token_counter
        self._texts: dict[str, int] = {}
        self._counted: dict[int, tuple[Messages, int]] = {}  # id -> (the prompt, kept alive; its tokens)

    def messages(self, messages: Messages) -> int:
        seen = self._counted.get(id(messages))
        if seen is None:
            seen = self._counted[id(messages)] = (messages, int(self._count(model=self.model, messages=messages)))
        return seen[1]

    def text(self, text: str) -> int:
        """A text's tokens (e.g. an answer schema), counted once."""
        if text not in self._texts:
            self._texts[text] = int(self._count(model=self.model, text=text)) if text else 0
        return self._texts[text]

    def total(self, prompts: Sequence[Messages]) -> int:
        """The prompts' tokens: exact for up to ``EXACT`` of them, the rest by their length at the measured rate."""
        if len(prompts) <= EXACT:
            return sum(self.messages(p) for p in prompts)
        stride = len(prompts) / EXACT
        picked = {int(i * stride) for i in range(EXACT)}
        counted = sum(self.messages(prompts[i]) for i in picked)
        chars = sum(_chars(prompts[i]) for i in picked) or 1
        rest = sum(_chars(p) for i, p in enumerate(prompts) if i not in picked)
        return counted + round(rest * counted / chars)

    def mean(self, prompts: Sequence[Messages]) -> float | None:
        """Mean tokens of a prompt among ``prompts`` (up to ``EXACT`` counted), None when there are none."""
        if not prompts:
            return None
        stride = max(1.0, len(prompts) / EXACT)
        picked = sorted({int(i * stride) for i in range(min(EXACT, len(prompts)))})
        return statistics.fmean(self.messages(prompts[i]) for i in picked)


def cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD from litellm's price map (its custom prices too); None: litellm cannot price the model."""
    try:
        prompt_cost, completion_cost = _litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    except Exception:  # noqa: BLE001 - litellm raises several kinds for a model it does not know
        return None
    return float(prompt_cost) + float(completion_cost)


@dataclass(frozen=True)
class Completion:
    """Completion tokens per request: the estimate and its low and high, and where they come from."""

    low: float
    mean: float
    high: float
    source: str


def _default(reason: str) -> Completion:
    low, mean, high = DEFAULT_COMPLETION
    return Completion(low, mean, high, f"default {mean} per request ({low}-{high}): {reason}")


def _read(db: Path | None, query: str, args: list[Any]) -> list[tuple[Any, ...]]:
    """Rows from the results file opened read-only, only if it exists; none on any error (an older file)."""
    if db is None or not db.is_file():
        return []
    import duckdb

    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error:
        return []
    try:
        return con.execute(query, args).fetchall()
    except duckdb.Error:
        return []
    finally:
        con.close()


def _spread(values: list[float], source: str) -> Completion:
    values = sorted(values)
    q = statistics.quantiles(values, n=20, method="inclusive") if len(values) > 1 else [values[0]] * 19
    return Completion(low=q[4], mean=statistics.fmean(values), high=q[17], source=source)  # p25 and p90


def completion_history(db: Path | None, scorer_id: str, model: str, judge_steps: int) -> Completion:
    """Completion tokens per request from this scorer and judge model's stored cells (each sample's row when the
    cell was judged several times): a cell's completion tokens over its judge steps. Estimate: their mean; low:
    the 25th percentile; high: the 90th."""
    rows = _read(db, f"""
        SELECT completion_tokens FROM (
          SELECT completion_tokens, created_at FROM scores WHERE scorer_id = ? AND judge_model = ?
            AND completion_tokens > 0 AND coalesce(samples, 1) = 1
          UNION ALL
          SELECT completion_tokens, created_at FROM score_samples
            WHERE scorer_id = ? AND judge_model = ? AND completion_tokens > 0
        ) ORDER BY created_at DESC LIMIT {HISTORY_CELLS}""", [scorer_id, model, scorer_id, model])
    if not rows:
        return _default("no stored cell of this scorer and judge model")
    values = [float(n) / max(judge_steps, 1) for (n,) in rows]
    return _spread(values, f"history: {len(values)} stored cell(s) of this scorer and judge model")


def prompt_history(db: Path | None, scorer_id: str, model: str) -> dict[str, list[str]]:
    """Stored prompts of this scorer and judge model's newest cells, per step name (the user message)."""
    found: dict[str, list[str]] = {}
    for (prompts,) in _read(db, """SELECT prompts FROM scores WHERE scorer_id = ? AND judge_model = ?
                                   AND prompts IS NOT NULL ORDER BY created_at DESC LIMIT 50""", [scorer_id, model]):
        try:
            for name, text in json.loads(prompts).items():
                if isinstance(text, str):
                    found.setdefault(name, []).append(text)
        except (TypeError, ValueError, AttributeError):
            continue
    return found


def target_history(db: Path | None, label: str, counter: TokenCounter, outputs: list[Any]) -> Completion:
    """A model target's answer tokens: those of its cached answers this preflight read, else of the outputs
    stored by runs of the same target, else the default."""
    source = f"{len(outputs)} cached answer(s) of this target"
    if not outputs:
        outputs = [o for (o,) in _read(db, f"""SELECT i.output FROM items i JOIN runs r USING (run_id)
                                             WHERE r.config->>'target' = ? AND i.output IS NOT NULL
                                             ORDER BY r.started_at DESC LIMIT {EXACT}""", [label])]
        source = f"history: {len(outputs)} stored answer(s) of this target"
    if not outputs:
        return _default("no cached or stored answer of this target")
    values = [float(counter.text(o if isinstance(o, str) else json.dumps(o))) for o in outputs[:EXACT]]
    return _spread(values, source)
