"""Session-wide isolation: no telemetry, no price-list download, a private PREFECT_HOME.

Set before anything imports prefect or litellm, so every test (and every process a test starts, which
inherits os.environ) runs against temporary state, never the user's ~/.prefect.
"""

from __future__ import annotations

import os
import tempfile

os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["DO_NOT_TRACK"] = "1"
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="evalduck-test-prefect-"))
os.environ["PREFECT_LOGGING_TO_API_ENABLED"] = "false"
os.environ.pop("PREFECT_API_URL", None)
# A CLI run outside CI would start a background Prefect server for its folder and leave it running
# (flows/local_server.py); tests that mean to test that unset this.
os.environ["EVALDUCK_EPHEMERAL"] = "1"
os.environ.pop("EVALDUCK_JUDGE_MODEL", None)
os.environ.pop("EVALDUCK_DB", None)


def pytest_collection_modifyitems(items: list) -> None:  # type: ignore[type-arg]
    """Run the end-to-end tests last. One of them runs a flow in this process against the e2e server, and
    Prefect's process-wide events worker stays bound to that server afterwards, so task runs of later
    in-process flows (against the test harness) would never be recorded."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)
