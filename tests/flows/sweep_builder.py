"""A stored sweep built with the store API (no run, no Prefect): two axes (target x temperature), two scorers
(`tone` higher is better, `halluc` lower is better), every cell priced; one label holds `<script>`, `|` and
quotes. For tests/flows/test_sweep_report.py and tests/flows/test_sweep_artifact.py."""

from __future__ import annotations

import random
from pathlib import Path

from evalduck.flows.store import ScoreRow, Store
from evalduck.flows.store.sweeps import finish_sweep, start_sweep, tag_run

SWEEP_ID = "5eed0001-aaaa-bbbb-cccc-000000000001"
NAME = "tone <sweep>"
EVIL = 'model:b<script>alert("x")</script>'
AXES = {"target": ["model:a", EVIL], "temperature": [0, 0.7]}
BASELINE = "model:a | 0"
ITEMS = [f"q{i}" for i in range(20)]
SHIFT = {"model:a": 0.0, EVIL: 0.15}  # what the target adds to `tone` (a third of it off `halluc`)
CELL_COST = {"model:a": 0.001, EVIL: 0.004}  # per judged cell, times (1 + temperature)


def label(target: str, temperature: float) -> str:
    return f"{target} | {temperature}"


def build(db: Path, repeats: int = 1) -> Store:
    """The sweep in a DuckDB file at ``db``; its candidates' runs `run-<target index><temperature index>-<repeat>`."""
    store = Store(db)
    rng = random.Random(1)
    spec = {label(t, k): {"target": t, "temperature": k} for t in AXES["target"] for k in AXES["temperature"]}
    start_sweep(store, SWEEP_ID, name=NAME, file="sweep.yaml", spec=spec, axes=AXES, baseline=BASELINE,
                flow_run_id=None)
    for i, target in enumerate(AXES["target"]):
        for j, temperature in enumerate(AXES["temperature"]):
            for repeat in range(repeats):
                run_id = f"run-{i}{j}-{repeat}"
                shift = SHIFT[target] + 0.02 * j
                store.start_run(run_id, f"{NAME}/{label(target, temperature)}", "d.jsonl", "ab" * 32, {},
                                directions={"tone": True, "halluc": False},
                                items=[{"item_id": item, "input": item} for item in ITEMS])
                tag_run(store, run_id, SWEEP_ID, label(target, temperature), repeat)
                store.write_batch(run_id, scores=[
                    ScoreRow(run_id=run_id, item_id=item, scorer_id=scorer, scorer_version="1",
                             score=round(min(1, max(0, 0.5 + (shift if scorer == "tone" else -shift / 3)
                                                    + rng.gauss(0, 0.1))), 3),
                             judge_model="judge", prompt_tokens=10, completion_tokens=5,
                             cost=CELL_COST[target] * (1 + temperature))
                    for scorer in ("tone", "halluc") for item in ITEMS])
                store.finish_run(run_id, "completed")
    finish_sweep(store, SWEEP_ID, "completed")
    return store
