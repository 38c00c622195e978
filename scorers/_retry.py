"""Retries for the standalone ``scorer.run``: exponential backoff with jitter, honouring Retry-After.

Orchestrators call ``step.arun`` and retry with their own machinery instead.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from evalduck.scorers._errors import JudgeTransientError
from evalduck.scorers._failures import RETRY_AFTER_CAP_S

__all__ = ("BACKOFF_BASE_S", "BACKOFF_MAX_S", "backoff_delay", "with_retries")

logger = logging.getLogger("evalduck.scorers.retry")

T = TypeVar("T")

BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 30.0


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """Seconds before retry number ``attempt + 1``: base * 2**attempt, jittered to 50-100 %, and never
    less than the (capped) Retry-After."""
    delay = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2**attempt) * random.uniform(0.5, 1.0)
    if retry_after is not None:
        delay = max(delay, min(retry_after, RETRY_AFTER_CAP_S))
    return delay


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


async def with_retries(call: Callable[[], Awaitable[T]], *, retries: int, label: str) -> T:
    """Await ``call()``, retrying JudgeTransientError up to ``retries`` times."""
    attempt = 0
    while True:
        try:
            return await call()
        except JudgeTransientError as exc:
            if attempt >= retries:
                raise
            delay = backoff_delay(attempt, exc.retry_after)
            logger.info("%s: transient judge error, retry %d/%d in %.2fs: %s", label, attempt + 1, retries, delay, exc)
            await _sleep(delay)
            attempt += 1
