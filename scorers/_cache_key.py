"""Step cache keys: sha256 over the canonical JSON of named components.

Everything that can change a step's result is a component; what cannot (run id, timeouts, retries,
concurrency, API keys, api_base, clients) is left out, so keys are stable across runs and machines.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

__all__ = (
    "KEY_FORMAT_VERSION",
    "EXCLUDED_SETTINGS",
    "canonical_json",
    "hash_components",
    "without_excluded",
)

logger = logging.getLogger("scorers.cache_key")

KEY_FORMAT_VERSION = 1

# Settings that cannot change what a judge answers, or must never be stored: never in a key.
EXCLUDED_SETTINGS: frozenset[str] = frozenset(
    {
        "run_id",
        "timeout",
        "retries",
        "num_retries",
        "max_retries",
        "concurrency",
        "api_key",
        "api_base",
        "base_url",
        "api_version",
        "organization",
        "headers",
        "extra_headers",
        "client",
        "metadata",
    }
)


def canonical_json(value: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """Sorted keys, no whitespace, non-ASCII kept: equal values always give the same text.

    Without ``default`` (cache keys) the value must be plain JSON: a value json cannot write, NaN or an
    infinity raises. With one (``default=str`` for item ids and target keys, over whatever a dataset row
    holds) values json cannot write go through it, and NaN and infinities are written as ``NaN`` and
    ``Infinity``, as ``json.dumps`` does by default.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default, allow_nan=default is not None
    )


def without_excluded(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` minus the excluded names, and minus anything that looks like a secret."""
    return {
        k: v
        for k, v in settings.items()
        if k not in EXCLUDED_SETTINGS and not any(s in k.lower() for s in ("key", "token", "secret", "password"))
    }


def hash_components(components: Mapping[str, Any]) -> str:
    """sha256 hex of the components' canonical JSON, with the key format version added."""
    text = canonical_json({"key_format": KEY_FORMAT_VERSION, **components})
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("cache key %s from %s", key, text[:2000])
    return key
