"""Store errors: each says which file or run is concerned and what to do."""

from __future__ import annotations

from pathlib import Path

__all__ = ("StoreError", "UnknownRunError", "SchemaVersionError", "StoreLockedError")


class StoreError(Exception):
    """Base of the store's errors."""


class UnknownRunError(StoreError, LookupError):
    """A run reference (id, name, `latest`, `previous`) that matches no run."""


class SchemaVersionError(StoreError):
    """The file was written by a newer evalduck whose schema this version cannot read safely."""


class StoreLockedError(StoreError, TimeoutError):
    """Another process kept the DuckDB file locked for longer than the retry budget.

    `holder_pid`/`holder` name that process when DuckDB said which; `run_id` is set by the ResultWriter
    whose write it stopped, so the CLI can say what was kept and how to resume.
    """

    def __init__(
        self, message: str, *, path: Path | None = None, timeout: float | None = None,
        holder_pid: int | None = None, holder: str | None = None, run_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.path, self.timeout, self.holder_pid, self.holder, self.run_id = path, timeout, holder_pid, holder, run_id
