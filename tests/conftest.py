"""Session-wide isolation: no telemetry, no price-list download, a private PREFECT_HOME.

Set before anything imports prefect or litellm, so every test (and every process a test starts, which
inherits os.environ) runs against temporary state, never the user's ~/.prefect.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["DO_NOT_TRACK"] = "1"
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="evalduck-test-prefect-"))
os.environ["PREFECT_LOGGING_TO_API_ENABLED"] = "false"
os.environ.pop("PREFECT_API_URL", None)
# A CLI run outside CI would start a background Prefect server for its folder and leave it running
# (flows/local/server.py); tests that mean to test that unset this.
os.environ["EVALDUCK_EPHEMERAL"] = "1"
os.environ.pop("EVALDUCK_JUDGE_MODEL", None)
os.environ.pop("EVALDUCK_DB", None)


# What a test starts, read from its fixtures and its module, as markers: `make test-fast` leaves these out.
_STARTS = {"prefect_harness": "harness", "dask_cluster": "dask"}


def _mark_what_it_starts(item: Any) -> None:
    """Mark ``item`` ``harness`` / ``dask`` by the fixtures it uses (a Prefect test server, a Dask cluster)
    and ``subprocess`` when its module imports ``subprocess`` (it runs the CLI, a script, a server...)."""
    for fixture, marker in _STARTS.items():
        if fixture in item.fixturenames:
            item.add_marker(marker)
    module = getattr(item, "module", None)
    if module is not None and "subprocess" in vars(module):
        item.add_marker("subprocess")


def pytest_collection_modifyitems(items: list) -> None:  # type: ignore[type-arg]
    """Mark each test by what it starts (``_mark_what_it_starts``). Run the end-to-end tests last. One of them runs a flow in this process against the e2e server, and
    Prefect's process-wide events worker stays bound to that server afterwards, so task runs of later
    in-process flows (against the test harness) would never be recorded. Among them, those of the e2e
    installation (the `stack` fixture) last: it is started in the background with the first e2e test
    (tests/e2e/early.py), while the others run."""
    for item in items:
        _mark_what_it_starts(item)
    items.sort(key=lambda item: (item.get_closest_marker("e2e") is not None, "stack" in item.fixturenames))


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One Prefect test harness (a temporary server) for the whole session: flows in this process, and CLI
    processes given its PREFECT_API_URL, record to it instead of starting a temporary server each (~10 s)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="module")
def dask_cluster() -> Iterator[Any]:
    """A real Dask ``LocalCluster`` of 2 worker processes (4 threads each) on 127.0.0.1, shared by one test
    module: pass ``dask_cluster.scheduler_address`` as ``dask_address`` with ``runner="dask"``. Its workers
    inherit this process's environment (the private PREFECT_HOME above)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=4, processes=True, dashboard_address=None,
                      host="127.0.0.1") as cluster:
        yield cluster
