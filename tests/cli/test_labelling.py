"""`evalduck label` as a person uses it: the real command in a subprocess serving its page on 127.0.0.1, three
cells labelled from the keyboard in headless Chromium (Debian's, driven by Playwright), the page reloaded, the
labels found stored; then exported as a labels file and read back by `evalduck calibrate --labels-from`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from evalduck.flows.store import ScoreRow, Store

CLI = str(Path(sys.executable).with_name("evalduck"))
CHROMIUM = Path(os.environ.get("EVALDUCK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCORER = "answer-relevancy-scorer"


def _store(folder: Path) -> Store:
    """A completed run of five judged cells, with its judge's model and prompt fingerprint recorded."""
    store = Store(folder / "evals.duckdb")
    config = {"run_scorers": [{"id": SCORER, "version": "1", "higher_is_better": True, "judge_model": "openai/m",
                               "prompt_fingerprint": "f1"}]}
    store.start_run("run-1", "labelled", "d.jsonl", "h", config)
    scores = [1.0, 0.0, 0.5, 1.0, 0.25]
    store.write_batch(
        "run-1", items=[{"item_id": f"q{i}", "input": f"<b>question {i}</b>", "output": f"answer {i}",
                         "groundTruth": f"truth {i}"} for i in range(5)],
        scores=[ScoreRow(run_id="run-1", item_id=f"q{i}", scorer_id=SCORER, scorer_version="1", score=s,
                         reason=f"reason {i}") for i, s in enumerate(scores)], status="completed")
    return store


def test_label_three_cells_with_the_keyboard_reload_and_find_them_stored(tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        if os.environ.get("EVALDUCK_REQUIRE_BROWSER") == "1":
            pytest.fail(f"EVALDUCK_REQUIRE_BROWSER=1 but no Chromium at {CHROMIUM}")
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    store = _store(tmp_path)
    server = subprocess.Popen([CLI, "label", "labelled", "-s", SCORER, "--labeller", "ana"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        line = server.stdout.readline() if server.stdout else ""
        assert "labelling 5 answer-relevancy-scorer cells of run run-1: open http://127.0.0.1:" in line, line
        url = line.split("open ", 1)[1].split(" ", 1)[0]
        with pytest.raises(urllib.error.HTTPError) as refused:  # the token is the door
            urllib.request.urlopen(url.split("?", 1)[0] + "api/cells", timeout=10)
        assert refused.value.code == 403
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page()
            problems: list[str] = []
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(url)
            expect(page.locator("#progress")).to_have_text("labelled 0 of 5 · cell 1")
            expect(page.locator("#input")).to_have_text("<b>question 0</b>")  # text, never markup
            page.keyboard.press("5")  # 1.0 on the default scale 0, 0.25, 0.5, 0.75, 1
            expect(page.locator("#progress")).to_have_text("labelled 1 of 5 · cell 2")
            page.keyboard.press("1")  # 0.0
            page.keyboard.press("ArrowRight")  # skip q2
            page.keyboard.press("3")  # 0.5 for q3
            expect(page.locator("#progress")).to_have_text("labelled 3 of 5 · cell 5")
            page.keyboard.press("ArrowLeft")
            expect(page.locator("#label")).to_have_text("0.5")
            page.reload()
            expect(page.locator("#progress")).to_have_text("labelled 3 of 5 · cell 3")  # the first unlabelled
            assert problems == []
            browser.close()
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=30)
    assert server.returncode == 0, err
    assert "stopped; every label given is stored" in out
    assert store.sql("SELECT item_id, value, labeller FROM labels ORDER BY item_id").rows == [
        ("q0", 1.0, "ana"), ("q1", 0.0, "ana"), ("q3", 0.5, "ana")]

    exported = subprocess.run([CLI, "label", "run-1", "-s", SCORER, "--export", "mine.jsonl"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in (tmp_path / "mine.jsonl").read_text().splitlines()]
    assert [(r["id"], r["label"], r["input"], r["metadata"]["labeller"]) for r in rows] == [
        ("q0", 1.0, "<b>question 0</b>", "ana"), ("q1", 0.0, "<b>question 1</b>", "ana"),
        ("q3", 0.5, "<b>question 3</b>", "ana")]

    shown = subprocess.run([CLI, "show", "run-1"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert "On the human labels' scale" in shown.stdout and "3 / 5" in shown.stdout  # PPI beside the judge's mean

    calibrated = subprocess.run([CLI, "calibrate", "--labels-from", "run-1", "-s", SCORER], cwd=tmp_path,
                                capture_output=True, text=True, timeout=60)
    assert calibrated.returncode == 0, calibrated.stderr
    assert "3 labelled cells of run run-1" in calibrated.stdout
    ((n, model, fingerprint, mae),) = store.sql("SELECT n, judge_model, prompt_fingerprint, mae FROM calibrations").rows
    assert (n, model, fingerprint, mae) == (3, "openai/m", "f1", pytest.approx(0.5 / 3))  # q3: judge 1.0, label 0.5
