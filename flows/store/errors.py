"""Store errors: each says which file or run is concerned and what to do."""

from __future__ import annotations

__all__ = ("StoreError", "UnknownRunError", "SchemaVersionError", "StoreLockedError")


class StoreError(Exception):
    """Base of the store's errors."""


class UnknownRunError(StoreError, LookupError):
    """A run reference (id, name, `latest`, `previous`) that matches no run."""


class SchemaVersionError(StoreError):
    """The file was written by a newer evalduck whose schema this version cannot read safely."""


class StoreLockedError(StoreError, TimeoutError):
    """Another process kept the DuckDB file locked for longer than the retry budget."""
