"""Prompt alignment (SCORERS.md 1.8): four dimensions, weighted by mode, against the user and/or system prompt."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from judged import JUDGE

from evalduck.scorers import ConfigError, InvalidJudgeAnswer, NotScorable, create_prompt_alignment_scorer
from evalduck.scorers.prebuilt.prompt_alignment import BLANK_OUTPUT
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer

CHAT = [
    {"role": "system", "content": "Answer in one sentence."},
    {"role": "system", "content": "Be polite."},
    {"role": "user", "content": "What is the capital of France?"},
]


def analysis(i: float, r: float, c: float, a: float) -> dict[str, Any]:
    data = copy.deepcopy(BLANK_OUTPUT)
    data["intentAlignment"]["score"] = i
    data["requirementsFulfillment"]["overallScore"] = r
    data["completeness"]["score"] = c
    data["responseAppropriateness"]["score"] = a
    return data


@pytest.mark.parametrize(
    ("mode", "dims", "scale", "expected"),
    [
        ("both", (1, 1, 1, 1), 1.0, 1.0),
        ("user", (1, 0.5, 0.5, 0), 1.0, 0.65),  # 0.4 + 0.15 + 0.1
        ("both", (0.5, 0.5, 0.5, 0.5), 1.0, 0.5),
        ("system", (1, 0.5, 0.5, 0), 1.0, 0.6),  # 0.35 + 0.175 + 0.075
        ("system", (0.1, 0.1, 0.1, 0.1), 1.0, 0.1),
        ("user", (0.25, 0, 0, 0.25), 1.0, 0.13),  # 0.1 + 0.025 = 0.125, halves up
        ("both", (1, 1, 0, 0), 10, 7.0),
    ],
)
def test_formula(mode: str, dims: tuple[float, float, float, float], scale: float, expected: float, step_result: Any) -> None:
    scorer = create_prompt_alignment_scorer(JUDGE, evaluation_mode=mode, scale=scale)
    assert step_result(scorer, "generate_score", {"analyze": analysis(*dims)}, input=CHAT) == expected


def test_run_against_the_fake_judge(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_prompt_alignment_scorer(fake_judge).run(input=CHAT, output="The capital of France is Paris.")
    assert "<user_prompt>\nWhat is the capital of France?\n</user_prompt>" in result.analyze_prompt
    assert "<system_prompt>\nAnswer in one sentence.\n\nBe polite.\n</system_prompt>" in result.analyze_prompt
    assert result.analyze_step_result["intentAlignment"]["score"] == 1.0 and result.score == 1.0
    assert fake.request_count == 2 and fake.requests[0]["response_format"]["json_schema"]["name"] == "PromptAlignment"


def test_both_mode_with_a_string_input_judges_the_user_prompt(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_prompt_alignment_scorer(fake_judge).run(input="List three rivers.", output="Bananas.")
    assert "<system_prompt>" not in result.analyze_prompt and "the user prompt." in result.analyze_prompt
    assert result.score == 0.1  # the fake: nothing addressed, appropriateness 1 -> 0.1 * 1


def test_system_mode(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_prompt_alignment_scorer(fake_judge, evaluationMode="system").run(input=CHAT, output="Paris.")
    assert "<user_prompt>" not in result.analyze_prompt and "<system_prompt>" in result.analyze_prompt


@pytest.mark.parametrize(
    ("mode", "run_input", "message"),
    [
        ("system", "What is the capital?", r"evaluation_mode 'system' needs a system prompt.*evaluation_mode 'user' or 'both'"),
        ("user", [{"role": "system", "content": "Be brief."}], r"evaluation_mode 'user' needs a user prompt.*'system' or 'both'"),
        ("both", None, r"evaluation_mode 'both' needs a user prompt.*'user' or 'system'"),
        ("both", "   ", "needs a user prompt"),
    ],
)
def test_not_scorable_names_the_mode_and_the_others(mode: str, run_input: Any, message: str, fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    with pytest.raises(NotScorable, match=message):
        create_prompt_alignment_scorer(fake_judge, evaluation_mode=mode).run(input=run_input, output="")
    assert fake.request_count == 0


def test_blank_output_scores_zero_without_a_request(fake: FakeOpenAIServer, fake_judge: dict[str, Any]) -> None:
    result = create_prompt_alignment_scorer(fake_judge).run(input=CHAT, output="")
    assert result.analyze_step_result == BLANK_OUTPUT and result.score == 0.0
    assert result.reason and fake.request_count == 0


def test_scores_outside_zero_to_one_are_invalid(fake: FakeOpenAIServer, fake_judge: dict[str, Any], step_result: Any) -> None:
    bad = analysis(1.5, 1, 1, 1)
    fake.script(bad, bad)
    with pytest.raises(InvalidJudgeAnswer, match=r"`intentAlignment\.score` input should be less than or equal to 1"):
        step_result(create_prompt_alignment_scorer(fake_judge), "analyze", None, **{"input": CHAT, "output": "Paris."})


def test_bad_options() -> None:
    with pytest.raises(ConfigError, match="`evaluation_mode` input should be 'user', 'system' or 'both', got 'all'"):
        create_prompt_alignment_scorer(JUDGE, evaluation_mode="all")
