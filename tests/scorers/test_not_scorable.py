"""SCORERS.md 0.3 (NotScorable, never retried) and 0.1's context resolution, the helper judge scorers share."""

from __future__ import annotations

import pickle

import pytest

from evalduck.scorers import ConfigError, JudgePrompt, NotScorable, ScorerInput, ScorerInputError, create_scorer
from evalduck.scorers.prebuilt._options import OptionsModel, parse_options
from evalduck.scorers.prebuilt._passages import ContextOption, resolve_context

TOOLS = [
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "search"}}]},
    {"role": "tool", "content": "Paris is in France.", "tool_call_id": "c"},
    {"role": "tool", "content": "It has 2.1M people."},
    {"role": "assistant", "content": "Paris, France."},
]


def test_a_value_error_that_survives_a_process_boundary() -> None:
    assert issubclass(NotScorable, ScorerInputError) and issubclass(NotScorable, ValueError)
    again = pickle.loads(pickle.dumps(NotScorable("no context")))
    assert type(again) is NotScorable and str(again) == "no context"


def test_standalone_run_raises_it_without_retrying(sleeps: list[float]) -> None:
    calls = []

    def first(ctx: object) -> None:
        calls.append(1)
        raise NotScorable("needs `context`")

    scorer = create_scorer(
        "needs-context", preprocess=first, generate_score=lambda ctx: 1.0,
        generate_reason=JudgePrompt(prompt=lambda ctx: "never asked"),
        judge={"model": "openai/never", "retries": 3},
    )
    with pytest.raises(NotScorable, match="needs `context`"):
        scorer.run(output="a")
    assert calls == [1] and sleeps == []


class _Options(OptionsModel):
    context: ContextOption = None


def run(**fields: object) -> ScorerInput:
    return ScorerInput.from_call((), {"output": "Paris, France.", **fields})


class TestResolveContext:
    def test_the_runs_context_wins_even_empty(self) -> None:
        assert resolve_context(run(context=["a", "b"]), ["opt"], "x") == ["a", "b"]
        assert resolve_context(run(context=[]), ["opt"], "x", tool_results_fallback=True) == []

    def test_then_the_option(self) -> None:
        assert resolve_context(run(output=TOOLS), ["opt"], "x", tool_results_fallback=True) == ["opt"]

    def test_then_tool_results_for_faithfulness_only(self) -> None:
        assert resolve_context(run(output=TOOLS), None, "x", tool_results_fallback=True) == [
            "Paris is in France.", "It has 2.1M people."]
        with pytest.raises(NotScorable, match="hallucination-scorer needs a context"):
            resolve_context(run(output=TOOLS), None, "hallucination-scorer")

    def test_none_names_where_to_give_one(self) -> None:
        with pytest.raises(NotScorable) as info:
            resolve_context(run(), None, "faithfulness-scorer", tool_results_fallback=True)
        message = str(info.value)
        assert message.startswith("faithfulness-scorer needs a context")
        assert "`context`" in message and "scorer option `context`" in message and "tool results" in message


class TestContextOption:
    @pytest.mark.parametrize(("value", "passages"), [("one", ["one"]), (["a", "b"], ["a", "b"]), (None, None)])
    def test_accepted(self, value: object, passages: object) -> None:
        assert parse_options(_Options, {"context": value}, {}).context == passages

    @pytest.mark.parametrize("value", ["", [], ["a", 1], 3, {"a": "b"}])
    def test_rejected(self, value: object) -> None:
        with pytest.raises(ConfigError, match="`context` must be a non-empty string or a non-empty list of strings"):
            parse_options(_Options, {"context": value}, {})
