"""evalduck scorers: a pure library (no prefect) of scorer pipelines, with an LLM judge through litellm.

>>> from evalduck.scorers import create_textual_difference_scorer
>>> create_textual_difference_scorer().run(input="q", output="Paris", ground_truth="Paris").score
1.0
"""

from __future__ import annotations

from evalduck.scorers import prebuilt
from evalduck.scorers._cache_key import canonical_json
from evalduck.scorers._context import ScorerInput, StepContext, check_context, check_expected_tool, check_tool_order
from evalduck.scorers._errors import (
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
from evalduck.scorers._judge import JUDGE_MODEL_ENV, JudgeSettings
from evalduck.scorers._load import load_scorer, locate_scorer
from evalduck.scorers._messages import check_text_field
from evalduck.scorers._pipeline import PipelineState, RunStep, walk_steps
from evalduck.scorers._result import JudgeUsage, ScorerResult, StepOutput
from evalduck.scorers._scorer import Scorer, create_scorer
from evalduck.scorers._step import JudgePrompt, Step
from evalduck.scorers._sync import run_sync
from evalduck.scorers.judge import (
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
from evalduck.scorers.prebuilt import *  # noqa: F403 - PREBUILT, PrebuiltScorer and the sixteen factories (prebuilt.__all__)

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
