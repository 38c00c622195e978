"""How a prebuilt factory declares itself (SCORERS.md 0.6): id, version, judge or code, direction, and what its
score measures."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from evalduck.scorers import _cache_key

if TYPE_CHECKING:
    from evalduck.scorers._scorer import Scorer

__all__ = ("PrebuiltScorer", "prebuilt")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class PrebuiltScorer:
    """A prebuilt scorer: its id, its factory (``factory(options)``), whether it calls a judge, its version,
    its direction and what it measures (one line, the built scorer's ``description``), as ``evalduck.scorers.PREBUILT``
    lists it."""

    id: str
    factory: Callable[..., Scorer]
    needs_judge: bool
    version: str
    higher_is_better: bool
    description: str = ""

    @property
    def reads(self) -> tuple[str, ...]:
        """The run fields the scorer reads, as its factory declares them."""
        return tuple(getattr(self.factory, "reads", ()))

    @classmethod
    def of(cls, factory: Callable[..., Scorer]) -> PrebuiltScorer:
        """The entry of a factory declared with ``@prebuilt``."""
        attrs = getattr(factory, "__dict__", {})
        return cls(attrs["scorer_id"], factory, attrs["needs_judge"], attrs["version"], attrs["higher_is_better"],
                   attrs.get("description", ""))


def prebuilt(
    scorer_id: str, version: str, *, needs_judge: bool, higher_is_better: bool = True, reads: tuple[str, ...] = (),
    description: str = "",
) -> Callable[[F], F]:
    """Declare a factory's ``scorer_id``, ``version``, ``needs_judge``, ``higher_is_better`` and ``description``
    (what the score measures, without its direction) as attributes (the scorer it builds must carry the same:
    tests/scorers/test_catalog.py), and ``reads``, the run fields it reads as docs/scorers.md's table names them
    (e.g. ``("input", "output")``). The description is known without building the scorer: a judge scorer
    skipped for want of a model still says what it would have measured.

    The scorers it builds carry the digest of the factory's module source and the package modules it imports
    (``_cache_key.source_digest``) in every step, so their cache keys follow the code, not only ``version``."""

    def declare(made: F) -> F:
        @functools.wraps(made)
        def factory(*args: Any, **kwargs: Any) -> Scorer:
            scorer = made(*args, **kwargs)
            code = _cache_key.source_digest(made.__module__)
            return dataclasses.replace(scorer, steps=tuple(dataclasses.replace(s, code=code) for s in scorer.steps))

        factory.scorer_id = scorer_id  # type: ignore[attr-defined]
        factory.version = version  # type: ignore[attr-defined]
        factory.needs_judge = needs_judge  # type: ignore[attr-defined]
        factory.higher_is_better = higher_is_better  # type: ignore[attr-defined]
        factory.description = description  # type: ignore[attr-defined]
        factory.reads = tuple(reads)  # type: ignore[attr-defined]
        return factory  # type: ignore[return-value]

    return declare
