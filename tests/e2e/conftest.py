"""One real Prefect installation for the whole e2e session, started and stopped by `evalduck.flows.local.install`.

`serve()` starts `prefect server start` on a free loopback port with a temporary PREFECT_HOME, creates
the process work pool, runs the real `prefect --no-prompt deploy --all` on a test copy of the project's
`prefect.yaml` (only the interval schedule is shortened and switched off, so the test that checks the
scheduler decides when it runs) and starts a real worker. It runs in a process of its own, started in the
background with the first e2e test (tests/e2e/early.py; the e2e tests that use it run last); at the session's
end `stop()` ends all of it by process id, whatever the tests did.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import early
import pytest
from e2e_harness import REPO, PrefectApi, Stack, api_client, free_port, project_folder, short_interval_prefect_yaml

from evalduck.flows.local.install import ServeOptions, ServeState, stop

# `serve()` in a process of its own: its lines on stderr, the state it returns as the last line of stdout.
SERVE = """\
import sys
from evalduck.flows.local.install import ServeOptions, serve
state = serve(ServeOptions.model_validate_json(sys.argv[1]), say=lambda line: print(f"[e2e serve] {line}", file=sys.stderr))
print(state.model_dump_json())
"""


def _fixtures(session: pytest.Session) -> set[str]:
    """The fixtures the selected tests ask for: the early jobs to start."""
    return {name for item in session.items for name in getattr(item, "fixturenames", ())}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the early jobs that the selected tests ask for (tests/e2e/early.py)."""
    if session.config.option.collectonly or not session.items:
        return
    early.launch(_fixtures(session))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """With the first e2e test, start the late jobs that the selected tests ask for."""
    if item.get_closest_marker("e2e") is not None:
        early.launch(_fixtures(item.session), late=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    early.finish()


@early.job("stack", late=True)
def _start_stack(context: early.Context) -> tuple[ServeOptions, ServeState]:
    root = context.root
    options = ServeOptions(
        project_dir=REPO,
        state_dir=root / "state",
        db_path=root / "evals.duckdb",
        cache_dir=root / "cache",
        port=free_port(),
        prefect_file=short_interval_prefect_yaml(root / "prefect.yaml"),
        extra_env={
            "PREFECT_HOME": str(root / "prefect-home"),
            "PREFECT_WORKER_QUERY_SECONDS": "1",
            # The scheduler looks every 2 s and keeps at most 2 future runs, so the 4 s test interval
            # yields a steady trickle of runs rather than the default 100 queued behind each other.
            "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "2",
            "PREFECT_SERVER_SERVICES_SCHEDULER_MAX_RUNS": "2",
            "PREFECT_SERVER_SERVICES_SCHEDULER_MIN_RUNS": "1",
            "PREFECT_LOGGING_TO_API_ENABLED": "true",
            "OPENAI_API_KEY": "sk-fake-e2e",  # the judge in test_deployments is a fake server on 127.0.0.1
        },
    )
    context.cleanups.append(lambda: stop(options.state_dir, say=lambda line: print(f"[e2e stop] {line}")))
    done = subprocess.run([sys.executable, "-c", SERVE, options.model_dump_json()], cwd=REPO, env=context.env,
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"serve() failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr[-6000:]}")
    return options, ServeState.model_validate_json(done.stdout.splitlines()[-1])


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    options, state = early.result("stack")
    with api_client(state.api_url, options.state_dir) as client:  # the server's credentials: the API wants them
        yield Stack(state=state, options=options, api=PrefectApi(client))


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One headless Chromium per UI test module (a start costs seconds); each test gets a page of its own."""
    from ui_browser import CHROMIUM, CHROMIUM_ARGS, MISSING

    if not CHROMIUM.exists():
        pytest.fail(f"EVALDUCK_REQUIRE_BROWSER=1 but {MISSING}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900},
        )
        # The V2 UI loads the Amplitude SDK even with analytics off; keep it from trying the network.
        context.route(re.compile(r".*amplitude\.com.*"), lambda route: route.abort())
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def browser_page(browser: object) -> Iterator[object]:
    from playwright.sync_api import BrowserContext

    assert isinstance(browser, BrowserContext)
    page = browser.new_page()
    try:
        yield page
    finally:
        page.close()


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A project folder with a dataset, and the environment of a user's shell with its own PREFECT_HOME;
    `evalduck stop` at the end, then whatever a failed test left is killed."""
    with project_folder(tmp_path) as made:
        yield made
