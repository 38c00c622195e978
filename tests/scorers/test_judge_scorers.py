"""What the nine judge scorers of SCORERS.md 1 share: exact result shapes, answers from the fake judge for
every step, and the options that change a judge step's answer in that step's cache key."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import Any

import pytest
from judged import JUDGE

from evalduck.scorers import PREBUILT, Scorer, StepOutput
from evalduck.scorers._judge import _parse, output_schema
from evalduck.scorers.testing.fake_openai import default_responder, request_step

CONTEXT = ["The Eiffel Tower is in Paris.", "It was completed in 1889."]
TOOL_OUTPUT = [
    {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "get_weather"}}]},
    {"role": "assistant", "content": "It is sunny in Paris. I think Paris is great."},
]
RUN = {
    "input": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Where is the Eiffel Tower?"}],
    "output": "The Eiffel Tower is in Paris. I think it is beautiful.",
    "ground_truth": "The Eiffel Tower is in Paris.",
    "context": CONTEXT,
}
# SCORERS.md 1: the top-level keys of each judge scorer's preprocess and analyze results.
SHAPES: dict[str, dict[str, list[str]]] = {
    "faithfulness-scorer": {"preprocess": ["claims"], "analyze": ["verdicts"]},
    "hallucination-scorer": {"preprocess": ["claims"], "analyze": ["verdicts"]},
    "answer-similarity-scorer": {"preprocess": ["outputUnits", "groundTruthUnits"], "analyze": ["matches", "extraInOutput", "contradictions"]},
    "context-precision-scorer": {"analyze": ["verdicts"]},
    "context-relevance-scorer": {"analyze": ["evaluations", "missingContext", "overallAssessment"]},
    "bias-scorer": {"preprocess": ["opinions"], "analyze": ["results"]},
    "toxicity-scorer": {"analyze": ["verdicts"]},
    "prompt-alignment-scorer": {"analyze": ["intentAlignment", "requirementsFulfillment", "completeness", "responseAppropriateness", "overallAssessment"]},
    "llm-tool-call-accuracy-scorer": {"preprocess": ["actualTools", "hasToolCalls", "toolCallInfos"], "analyze": ["evaluations", "missingTools"]},
}


def judged_in_process(scorer: Scorer, run: dict[str, Any]) -> dict[str, Any]:
    """Every step run in order, each judge request answered by the fake's default responder in this process
    (no server), the answer parsed and checked as a real one is."""
    results: dict[str, Any] = {}
    for step in scorer.steps:
        ctx = scorer.context_for(step.name, run, results)
        jp = step.judge_prompt
        if jp is None or step.name == "generate_reason" or (jp.shortcut and jp.shortcut(ctx) is not None):
            if step.name != "generate_reason":
                results[step.name] = asyncio.run(step.arun(ctx)).result
            continue
        assert jp.output_model is not None
        request = {
            "messages": [{"role": "system", "content": step.instructions}, {"role": "user", "content": jp.prompt(ctx)}],
            "response_format": {"type": "json_schema", "json_schema": {"name": jp.output_model.__name__, "schema": output_schema(jp.output_model)}},
        }
        assert request_step(request) == step.name
        answer = default_responder(request)
        check = partial(jp.check, ctx) if jp.check else None
        results[step.name] = _parse(json.dumps(answer), jp.output_model, check)  # raises on an invalid answer
    return results


@pytest.mark.parametrize("scorer_id", list(SHAPES))
def test_the_fake_answers_every_step_validly_in_the_contracts_shape(scorer_id: str) -> None:
    entry = PREBUILT[scorer_id]
    options = {**JUDGE, "available_tools": [{"name": "get_weather", "description": "Weather"}]} if "tool" in scorer_id else JUDGE
    run = {**RUN, "output": TOOL_OUTPUT} if "tool" in scorer_id else RUN
    results = judged_in_process(entry.factory(options), run)
    for step, keys in SHAPES[scorer_id].items():
        assert list(results[step]) == keys
    assert 0 <= results["generate_score"] <= 1
    assert entry.needs_judge and entry.version == "1" and entry.reads


@pytest.mark.parametrize(
    ("scorer_id", "option", "a", "b", "steps"),
    [
        ("faithfulness-scorer", "context", "A.", "B.", ["preprocess", "analyze", "generate_reason"]),
        ("hallucination-scorer", "context", "A.", "B.", ["preprocess", "analyze", "generate_reason"]),
        ("context-precision-scorer", "context", "A.", "B.", ["analyze", "generate_reason"]),
        ("context-relevance-scorer", "context", "A.", "B.", ["analyze", "generate_reason"]),
        ("context-relevance-scorer", "penalties", {"missing_context_per_item": 0.1}, {}, ["generate_score"]),
        ("answer-similarity-scorer", "require_ground_truth", True, False, ["preprocess"]),
        ("answer-similarity-scorer", "missing_penalty", 0.1, 0.2, ["generate_score"]),
        ("prompt-alignment-scorer", "evaluation_mode", "user", "both", ["analyze", "generate_reason", "generate_score"]),
        ("llm-tool-call-accuracy-scorer", "available_tools", [{"name": "a"}], [], ["analyze"]),
        ("bias-scorer", "scale", 1, 2, ["generate_score"]),
    ],
)
def test_options_that_change_a_steps_answer_are_in_its_key(scorer_id: str, option: str, a: Any, b: Any, steps: list[str]) -> None:
    factory = PREBUILT[scorer_id].factory
    first, second = factory(JUDGE, **{option: a}), factory(JUDGE, **{option: b})
    for step in first.steps:
        ctx = first.context_for(step.name, {"input": "q", "output": "x"}, {}, 0.5)
        changed = step.cache_key(ctx) != second.step(step.name).cache_key(ctx)
        assert changed == (step.name in steps), (step.name, changed)


def test_the_fake_reasons_quote_the_score() -> None:
    scorer = PREBUILT["toxicity-scorer"].factory(JUDGE)
    ctx = scorer.context_for("generate_reason", {"output": "Hi."}, {"analyze": {"verdicts": [{"verdict": "no", "reason": "r"}]}}, 0.0)
    prompt = scorer.step("generate_reason").judge_prompt.prompt(ctx)  # type: ignore[union-attr]
    reply = default_responder({"messages": [{"role": "user", "content": prompt}]})
    assert reply.startswith("The score is 0.0: toxicity") and isinstance(StepOutput(result=reply).result, str)


USER_SCRIPT = """
import json, sys
from evalduck import scorers
from evalduck.scorers.testing.fake_openai import CANARY_KEY

judge = {"model": "openai/fake-judge", "api_base": sys.argv[1], "extra": {"api_key": CANARY_KEY}}
context = ["The Eiffel Tower is in Paris.", "Bananas are yellow."]
rag = {"input": "Where is the Eiffel Tower?", "output": "The Eiffel Tower is in Paris.", "context": context}
calls = [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "get_weather"}}]}]
runs = {
    "create_faithfulness_scorer": ({}, rag),
    "create_hallucination_scorer": ({}, rag),
    "create_answer_similarity_scorer": ({}, {"output": "Paris is in France.", "ground_truth": "Paris is in France."}),
    "create_context_precision_scorer": ({}, rag),
    "create_context_relevance_scorer": ({}, rag),
    "create_bias_scorer": ({}, {"output": "I think women are worse drivers."}),
    "create_toxicity_scorer": ({}, {"input": "Hi", "output": "You idiot. Hello."}),
    "create_prompt_alignment_scorer": ({}, {"input": "Where is the Eiffel Tower?", "output": "The Eiffel Tower is in Paris."}),
    "create_tool_call_accuracy_scorer_llm": ({"available_tools": [{"name": "get_weather", "description": "Weather"}]},
                                             {"input": "What is the weather in Rome?", "output": calls}),
}
print(json.dumps({name: getattr(scorers, name)({**judge, **options}).run(**run).score for name, (options, run) in runs.items()}))
"""


def test_a_users_script_runs_the_nine_against_the_fake_judge(fake: Any) -> None:
    """As a user would: a separate Python process, the public factories, ``scorer.run``, a loopback judge."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", USER_SCRIPT, fake.base_url], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == {
        "create_faithfulness_scorer": 1.0,
        "create_hallucination_scorer": 0.0,
        "create_answer_similarity_scorer": 1.0,
        "create_context_precision_scorer": 1.0,  # the useful passage came first
        "create_context_relevance_scorer": 0.5,  # one high passage, one of no relevance
        "create_bias_scorer": 1.0,
        "create_toxicity_scorer": 0.5,
        "create_prompt_alignment_scorer": 1.0,
        "create_tool_call_accuracy_scorer_llm": 1.0,
    }
    assert fake.request_count == 9 * 2 + 4  # analyze and reason each, and four judge preprocess steps


@pytest.mark.parametrize("scorer_id", [i for i, p in PREBUILT.items() if p.needs_judge])
def test_a_judge_scorer_stores_its_own_options_then_its_judges_public_settings(scorer_id: str) -> None:
    """judge_scorer (prebuilt/_judged.py): every judge step gets the judge the options describe, and the stored
    options end with its settings, the secret left out."""
    scorer = PREBUILT[scorer_id].factory(model="openai/x", temperature=0.3, retries=1, extra={"api_key": "sk-not-stored-1234"})
    public = scorer.judge.public_dict()
    assert list(scorer.options)[-len(public):] == list(public) and {k: scorer.options[k] for k in public} == public
    assert scorer.judge.temperature == 0.3 and "sk-not-stored-1234" not in json.dumps(scorer.options)
    assert all(step.judge == scorer.judge for step in scorer.steps if step.is_judge)
