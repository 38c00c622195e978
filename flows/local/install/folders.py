"""Every folder of this user's with evalduck processes recorded, for `evalduck stop --all` and `status --all`.

A copy of each folder's record (its state file) is kept under this user's runtime folder
(``$XDG_RUNTIME_DIR/evalduck/folders``, else ``<temp dir>/evalduck-<uid>/folders``; 0700, checked), written with
the record and removed with it. Why a registry and not a scan of the process table: the record is what
`evalduck stop` already trusts (pids, each checked against its command line before a signal), so `stop --all`
is exactly `stop` in every folder; the copy still stops a folder whose own record was deleted or whose
folder was moved away; the runtime folder is this user's only and scoped like the user's login (another
user's processes are never named, a test can point it elsewhere); a stale entry costs one look and is dropped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from evalduck.flows.local.warm.wire import own_folder, user_folder

__all__ = ("registry_dir", "register", "unregister", "registered")


def registry_dir() -> Path:
    """The user's folder of records, one per project folder with evalduck processes (what `stop --all` walks)."""
    return user_folder() / "folders"


def _entry(state_dir: Path) -> Path:
    return registry_dir() / f"{hashlib.sha256(os.fsencode(state_dir.resolve())).hexdigest()[:16]}.json"


def register(state_dir: Path, record: str) -> None:
    """Keep a copy of ``record`` (the state file's JSON) for ``state_dir``; never fails the caller (a run goes
    on without it: `stop --all` then misses that folder, `evalduck stop` in it still works)."""
    with contextlib.suppress(OSError):
        own_folder(registry_dir().parent)
        own_folder(registry_dir())
        entry = _entry(state_dir)
        scratch = entry.with_name(f".{entry.name}.{os.getpid()}")
        scratch.write_text(json.dumps({"state_dir": str(state_dir.resolve()), "record": json.loads(record)}) + "\n")
        os.replace(scratch, entry)


def unregister(state_dir: Path) -> None:
    """Take ``state_dir`` off that list (nothing of it runs any more)."""
    with contextlib.suppress(OSError):
        _entry(state_dir).unlink(missing_ok=True)


def registered() -> list[tuple[Path, dict[str, object]]]:
    """(state folder, the record's last copy) of every registered folder; unreadable entries are dropped."""
    folder = registry_dir()
    try:
        own_folder(folder.parent)
        own_folder(folder)
        entries = sorted(folder.glob("*.json"))
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            data = json.loads(entry.read_text())
            found.append((Path(data["state_dir"]), dict(data["record"])))
        except (OSError, ValueError, KeyError, TypeError):
            entry.unlink(missing_ok=True)
    return found
