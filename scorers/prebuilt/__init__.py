"""The prebuilt scorers (SPEC 3, SCORERS.md), one module each; ``PREBUILT`` lists them by id (``_catalog``).

The sixteen factories are exported by the names ``_catalog.FACTORIES`` gives, so that list is the only one.
"""

from __future__ import annotations

from evalduck.scorers.prebuilt import _catalog
from evalduck.scorers.prebuilt._catalog import *  # noqa: F403 - the factories, by their names
from evalduck.scorers.prebuilt._catalog import PREBUILT
from evalduck.scorers.prebuilt._declare import PrebuiltScorer

__all__ = ("PREBUILT", "PrebuiltScorer", *(factory.__name__ for factory in _catalog.FACTORIES))
