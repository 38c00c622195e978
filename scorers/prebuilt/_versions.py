"""The installed version of a data-bearing package, for the cache keys of the steps whose results it decides."""

from __future__ import annotations

from functools import cache
from importlib.metadata import version

__all__ = ("package_version",)


@cache
def package_version(distribution: str) -> str:
    """``"name==version"``: an upgrade of the package changes the key and re-runs the step."""
    return f"{distribution}=={version(distribution)}"
