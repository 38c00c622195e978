"""Store errors: each says which file or run is concerned and what to do."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from evalduck.errors import EvalduckError

__all__ = ("StoreError", "UnknownRunError", "SchemaVersionError", "StoreLockedError", "StoreDiskError",
           "disk_refusal", "write_refused")


class StoreError(EvalduckError):
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


# The errors a full or capped disk gives, as DuckDB reports them (libc's strerror text after the file): what
# each means, and what the user can do about it.
_DISK_ERRORS = {
    os.strerror(errno.ENOSPC): ("no space left on the device", "free space on that disk"),
    os.strerror(errno.EDQUOT): ("the disk quota is used up", "free space within the quota"),
    os.strerror(errno.EFBIG): ("the file reached the size limit (`ulimit -f`, or the file system's largest file)",
                               "raise that limit"),
}
_WRITE_REFUSALS = (os.strerror(errno.EROFS), os.strerror(errno.EACCES), os.strerror(errno.EPERM))
_FILE = re.compile(r'(?:write|open) file "(?P<file>[^"]+)"')


class StoreDiskError(StoreError):
    """The disk refused a write to the store's file or its `.wal` (full, over quota, over the file size limit).

    The transaction it broke was rolled back: what was stored before stays. `file` is the file DuckDB named;
    `meaning` and `remedy` say what happened and what to do; `run_id` is set by the ResultWriter whose write
    it stopped, as for StoreLockedError, and `at_start` by the run's start (run/prepare.py), which it undid.
    """

    def __init__(self, message: str, *, file: str, meaning: str, remedy: str, run_id: str | None = None) -> None:
        super().__init__(message)
        self.file, self.meaning, self.remedy, self.run_id = file, meaning, remedy, run_id
        self.at_start = False


def disk_refusal(exc: BaseException, path: Path | str) -> StoreDiskError | None:
    """`exc` (a DuckDB error) as a StoreDiskError when a full or capped disk caused it, else None."""
    text = str(exc)
    for strerror, (meaning, remedy) in _DISK_ERRORS.items():
        if strerror in text:
            found = _FILE.search(text)
            file = found.group("file") if found else str(path)
            return StoreDiskError(f"{file}: {meaning} ({strerror}); the write was rolled back, what was stored "
                                  f"before stays", file=file, meaning=meaning, remedy=remedy)
    return None


def write_refused(exc: BaseException) -> bool:
    """True for an open that failed because the file may not be written here (a read-only mount, another
    user's file), where a read-only open may still read it."""
    seen: BaseException | None = exc
    while seen is not None:
        if any(reason in str(seen) for reason in _WRITE_REFUSALS):
            return True
        seen = seen.__cause__
    return False
