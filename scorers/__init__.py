"""evalduck scorers: a pure library (no prefect) of scorer pipelines, with an LLM judge through litellm.

>>> from scorers import create_textual_difference_scorer
>>> create_textual_difference_scorer().run(input="q", output="Paris", ground_truth="Paris").score
1.0
"""

from __future__ import annotations

from scorers._cache_key import canonical_json
from scorers._context import ScorerInput, StepContext, check_context, check_expected_tool, check_tool_order
from scorers._errors import (
    ConfigError,
    EvalduckError,
    NotScorable,
    ScorerInputError,
    StepResultError,
    describe_validation,
    did_you_mean,
    error_hint,
    error_rule,
)
from scorers._judge import JUDGE_MODEL_ENV, JudgeSettings
from scorers._load import load_scorer, locate_scorer
from scorers._messages import check_text_field
from scorers._pipeline import PipelineState, RunStep, walk_steps
from scorers._result import JudgeUsage, ScorerResult, StepOutput
from scorers._scorer import Scorer, create_scorer
from scorers._step import JudgePrompt, Step
from scorers._sync import run_sync
from scorers.judge import (
    InvalidJudgeAnswer,
    JudgeConfigError,
    JudgeError,
    JudgeErrorKind,
    JudgeRequestError,
    JudgeTransientError,
    JudgeTransport,
    LiteLLMTransport,
    complete,
)
from scorers import prebuilt
from scorers.prebuilt import *  # noqa: F403 - PREBUILT, PrebuiltScorer and the sixteen factories (prebuilt.__all__)

__all__ = (
    "create_scorer",
    "load_scorer",
    "locate_scorer",
    "Scorer",
    "Step",
    "JudgePrompt",
    "StepContext",
    "ScorerInput",
    "ScorerResult",
    "StepOutput",
    "PipelineState",
    "RunStep",
    "walk_steps",
    "JudgeSettings",
    "JudgeUsage",
    "JudgeTransport",
    "LiteLLMTransport",
    "complete",
    "EvalduckError",
    "ConfigError",
    "ScorerInputError",
    "NotScorable",
    "StepResultError",
    "JudgeError",
    "JudgeTransientError",
    "JudgeConfigError",
    "JudgeRequestError",
    "JudgeErrorKind",
    "InvalidJudgeAnswer",
    "describe_validation",
    "canonical_json",
    "error_rule",
    "error_hint",
    "did_you_mean",
    "check_text_field",
    "check_context",
    "check_expected_tool",
    "check_tool_order",
    "run_sync",
    "JUDGE_MODEL_ENV",
    *prebuilt.__all__,
)
