"""What the warm starter imports once for all the runs it forks, and the fingerprint of the code those imports
stand for: a starter whose fingerprint no longer matches the files refuses runs and exits.

The user's code (a target module, custom scorers, the dataset) is never listed: each child imports it itself.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import time
from pathlib import Path

from evalduck.flows.local.warm.caller import PACKAGES_ROOT

__all__ = ("PRELOADS", "code_fingerprint", "preload")

# Imported once here instead of in every run: Prefect and its engines, evalduck's flows, CLI and store, and
# litellm (for the judge children the starter forks). Modules whose import starts a thread must not be
# listed: the starter refuses to serve if one did.
PRELOADS = (
    "prefect",
    "prefect.flow_engine",
    "prefect.task_engine",
    "prefect.logging.handlers",
    "prefect.events.worker",
    "prefect.client.orchestration",
    "prefect.results",
    "prefect.artifacts",
    "fastapi.encoders",  # imported by Prefect at a flow run's start, to serialise its parameters
    "evalduck.flows.cli",
    "evalduck.flows.cli.run",
    "evalduck.flows.eval_flow",
    "evalduck.flows.regression_flow",
    "evalduck.flows.local.server",
    "evalduck.flows.store",
    "evalduck.flows.judge.process",
    "litellm",
    "evalduck.scorers.judge",
)


def code_fingerprint(root: str = PACKAGES_ROOT) -> str:
    """Size and mtime of every source file of evalduck and of every site-packages folder on the path (an
    install or removal changes the folder): a starter whose imports are older than these is out of date."""
    digest = hashlib.sha256()
    for package in ("flows", "scorers"):
        for path in sorted((Path(root) / package).rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path}\0{stat.st_mtime_ns}\0{stat.st_size}\0".encode())
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")) and os.path.isdir(entry):
            digest.update(f"{entry}\0{os.stat(entry).st_mtime_ns}\0".encode())
    return digest.hexdigest()


def preload() -> float:
    """Import ``PRELOADS`` with evalduck's process defaults, remember Prefect's settings sources and the
    prebuilt scorers' code digests; the seconds the imports took."""
    from evalduck.flows.settings import apply_process_defaults

    apply_process_defaults()
    started = time.monotonic()
    for name in PRELOADS:
        importlib.import_module(name)
    from evalduck.flows.prefect_settings import remember_settings
    from evalduck.scorers import PREBUILT
    from evalduck.scorers._cache_key import source_digest

    remember_settings()
    # The prebuilt scorers' code digests (cache keys): read and parsed here once, not in every run. A child
    # inherits them only while the code is the starter's own (an edit changes code_fingerprint: refused).
    for entry in PREBUILT.values():
        source_digest(entry.factory.__module__)
    return time.monotonic() - started
