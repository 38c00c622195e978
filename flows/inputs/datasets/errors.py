"""What can be wrong with a dataset: its rows (every problem, each naming its file and line) or its path."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalduck.errors import EvalduckError

__all__ = ("DatasetError", "DatasetPathError")

_MAX_REPORTED = 10


class DatasetError(EvalduckError, ValueError):
    """A dataset that cannot be used: every problem found, each naming its file and line (or row)."""

    def __init__(self, problems: Sequence[str], *, path: str | None = None) -> None:
        self.problems = list(problems)
        self.path = path
        shown = self.problems[:_MAX_REPORTED]
        more = len(self.problems) - len(shown)
        text = "\n".join(shown) + (f"\n... and {more} more problem(s)" if more > 0 else "")
        super().__init__(text)


class DatasetPathError(DatasetError):
    """A path that names no dataset file (missing, a folder, an unknown format): the caller's mistake, not the
    data's. ``problem`` is the message without the path."""

    def __init__(self, path: Path, problem: str) -> None:
        self.problem = problem
        super().__init__([f"{path}: {problem}"], path=str(path))
