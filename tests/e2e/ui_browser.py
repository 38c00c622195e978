"""Headless Chromium for the UI tests (test_ui_run.py, test_ui_sweep.py): where it is, how it starts, and the
deployment page a user opens first. The `browser` and `browser_page` fixtures are in conftest.py.

Chromium comes from Debian (`apt-get install chromium`), driven by Playwright's Python API with its own
driver; `playwright install` is never needed. Without Chromium a UI test module is skipped with the install
command, unless EVALDUCK_REQUIRE_BROWSER=1 (set by .ci/run), which makes a missing browser a failure.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import Stack, log_in

CHROMIUM = Path(os.environ.get("EVALDUCK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
INSTALL_HINT = "apt-get update && apt-get install -y --no-install-recommends chromium"
MISSING = f"headless Chromium not found at {CHROMIUM}; install it with: {INSTALL_HINT}"
REQUIRED = os.environ.get("EVALDUCK_REQUIRE_BROWSER") == "1"


def skip_module_without_chromium() -> None:
    """At a UI test module's top: skipped when Chromium is missing (before the session's Prefect server is
    started for it), unless it is required."""
    if not CHROMIUM.exists() and not REQUIRED:
        pytest.skip(MISSING, allow_module_level=True)


def open_deployment_page(page: object, stack: Stack, deployment: dict[str, Any]) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    announced = stack.api.client.get(f"{stack.state.ui_url}/ui-settings").json()["api_url"]
    assert announced == stack.state.api_url, "the UI would call another server (see PREFECT_SERVER_API_PORT)"
    page.goto(f"{stack.state.ui_url}/v2/deployments/deployment/{deployment['id']}")
    if log_in(page, stack.auth):  # the server has basic auth: the UI asked for its string first
        page.goto(f"{stack.state.ui_url}/v2/deployments/deployment/{deployment['id']}")
    flow = stack.api.get(f"/flows/{deployment['flow_id']}")
    expect(page.get_by_role("link", name=flow["name"], exact=True).first).to_be_visible(timeout=60_000)
