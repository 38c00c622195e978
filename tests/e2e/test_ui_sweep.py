"""The run-sweep deployment from the Prefect UI, in headless Chromium: Run -> Custom run shows the sweep as a form
(its base as the eval's fields, the axes, repeat, the baseline), Submit runs the shipped sweep, and the results
file has it with its four candidates' runs. A bad sweep through the API: refused by the server, or failed with
each problem named by its field. The browser and its fixtures: tests/e2e/ui_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import Stack, wait_for
from ui_browser import open_deployment_page, skip_module_without_chromium

from evalduck.flows.store import Store

pytestmark = pytest.mark.e2e

skip_module_without_chromium()

LABELS = {"support_bots:faq_bot | terse.txt", "support_bots:faq_bot | friendly.txt",
          "support_bots:topic_bot | terse.txt", "support_bots:topic_bot | friendly.txt"}


def submit(page: Any, tmp_path: Path, stack: Stack, deployment: dict[str, Any], before: set[str]) -> dict[str, Any]:
    """Click Submit (again while the busy server answers 503, as a person would: README, "Deployments and the
    Prefect UI") and return the flow run it created."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(3):
        try:
            with page.expect_response(lambda r: r.url.endswith("/create_flow_run"), timeout=90_000) as response:
                page.get_by_role("button", name="Submit", exact=True).click()
        except PlaywrightTimeout:
            break  # no create request: the wait below fails with what the page reads
        if response.value.status != 503:
            break
        page.wait_for_timeout(2_000)

    def new_runs() -> list[dict[str, Any]]:
        return [r for r in stack.api.flow_runs(deployment["id"]) if r["id"] not in before]

    try:
        (run,) = wait_for("the sweep's flow run", new_runs, timeout=90, every=0.5)
    except AssertionError as exc:
        page.screenshot(path=str(tmp_path / "ui-sweep-submitted.png"), full_page=True)
        raise AssertionError(f"{exc}; the page at {page.url} reads:\n{page.locator('body').inner_text()[-2000:]}") from exc
    return run


def test_the_sweep_form_runs_the_shipped_sweep(browser_page: object, stack: Stack, tmp_path: Path) -> None:
    from playwright.sync_api import Page, expect

    page: Page = browser_page  # type: ignore[assignment]
    deployment = stack.api.deployment("sweep-demo")
    sweep = deployment["parameters"]["sweep"]
    before = {run["id"] for run in stack.api.flow_runs(deployment["id"])}
    open_deployment_page(page, stack, deployment)
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Custom run").click()
    page.wait_for_url(re.compile(r".*/deployments/deployment/[0-9a-f-]{36}/run.*"), timeout=30_000)
    # The form loads lazily, with the deployment's sweep: base's eval fields, then the sweep's own.
    expect(page.get_by_role("textbox", name="Dataset", exact=True)).to_have_value(sweep["base"]["dataset"],
                                                                                   timeout=30_000)
    ids = page.get_by_role("textbox", name=re.compile(r"^Id"))
    expect(ids).to_have_count(len(sweep["base"]["scorers"]), timeout=30_000)
    page.screenshot(path=str(tmp_path / "ui-sweep-form.png"), full_page=True)
    # The sweep's fields in order, its base the eval's own form (the run options folded under Advanced options).
    labels = [re.sub(r" \(Optional\)$", "", text.strip()) for text in page.locator("label").all_inner_texts()]
    shown = ["sweep", "Name", "Base", "Dataset", "Scorers", "Target", "Judge Model", "Advanced options", "Axes",
             "Candidates", "Repeat", "Baseline"]
    assert [label for label in labels if label in shown] == shown, labels
    assert "Concurrency" not in labels
    expect(page.get_by_role("textbox", name=re.compile(r"^Name"))).to_have_value(sweep["name"])
    text = page.locator("body").inner_text()  # the axes: a JSON editor with the deployment's values
    assert all(value in text for values in sweep["axes"].values() for value in values), text
    repeat = page.locator("div.group").filter(has=page.locator("label", has_text=re.compile(r"^Repeat"))).last
    expect(repeat.get_by_role("spinbutton")).to_have_value("1")

    run = submit(page, tmp_path, stack, deployment, before)
    finished = stack.api.wait_terminal(run["id"], timeout=300)
    assert finished["state_type"] == "COMPLETED", f"{finished['state']}\n{stack.worker_log()[-3000:]}"
    store = Store(stack.db_path)
    (stored,) = store.sql("SELECT sweep_id, name, status, file, baseline FROM sweeps WHERE flow_run_id = ?",
                          [run["id"]]).records()
    assert (stored["name"], stored["status"], stored["file"]) == ("sweep-demo", "completed", None)
    assert stored["baseline"] == "support_bots:faq_bot | terse.txt"
    runs = store.sql("SELECT candidate, status FROM runs WHERE sweep_id = ?", [stored["sweep_id"]]).records()
    assert sorted(r["candidate"] for r in runs) == sorted(LABELS) and {r["status"] for r in runs} == {"completed"}
    assert len(stack.api.subflow_runs(run["id"])) == 4
    page.screenshot(path=str(tmp_path / "ui-sweep-submitted.png"), full_page=True)


def test_a_bad_sweep_is_refused_by_the_server_or_fails_naming_its_fields(stack: Stack) -> None:
    deployment = stack.api.deployment("sweep-demo")
    sweep = deployment["parameters"]["sweep"]
    refused = stack.api.request("POST", f"/deployments/{deployment['id']}/create_flow_run",
                                {"state": {"type": "SCHEDULED"}, "parameters": {"sweep": {**sweep, "colour": "red"}}})
    assert refused.status_code == 409 and "colour" in refused.text, (refused.status_code, refused.text)
    bad = {**sweep, "axes": {**sweep["axes"], "target": []},
           "candidates": [{"target": "examples.support_bots:faq_bot", "baseline": True}]}
    created = stack.api.create_flow_run(deployment["id"], {"sweep": bad})
    failed = stack.api.wait_terminal(created["id"])
    assert failed["state_type"] == "FAILED", failed["state"]
    message = json.dumps(failed["state"])
    assert "sweep parameter axes.target: axis 'target' has no values" in message, message
    assert "sweep parameter candidates: give `axes` or `candidates`, not both" in message, message
