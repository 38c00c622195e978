"""Credentials written into URLs (`http://user:KEY@host/v1`) masked wherever a run's settings are kept or
shown: the results file's `runs.config` and Prefect's flow-run parameters. The run itself uses the real URL.

Only the userinfo part of a `scheme://` URL is masked; API keys given as such (environment, `extra`) are
never stored in the first place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalduck.scorers.judge import redact_url

__all__ = ("redact_url", "redact_urls")


def redact_urls(value: Any) -> Any:
    """A copy of JSON-like `value` (dicts, lists, tuples, strings) with `redact_url` applied to every string."""
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, Mapping):
        return {key: redact_urls(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_urls(item) for item in value]
    return value
