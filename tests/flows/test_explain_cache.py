"""--explain-cache's parts: which part of a step's key changed (flows/engine/cache_ledger.py), the record kept
in the cache folder between runs, and a judged run through run_evals with the fake judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flow_helpers import judge_scorer, rows

from evalduck.flows.engine.cache_ledger import (
    CHUNK,
    NEVER,
    REFRESH,
    SAME_KEY,
    UNCACHED,
    CacheLedger,
    cache_summary,
    changed_files,
    changed_parts,
    step_files,
    step_parts,
    target_parts,
)
from evalduck.scorers import PREBUILT, ScorerInput, StepContext, create_scorer
from evalduck.scorers.testing.fake_openai import FakeOpenAIServer


def test_changed_parts_names_each_part_that_differs_or_is_only_on_one_side() -> None:
    old = {"version": "a", "params": "b", "output": "c", "earlier_results.analyze": "d"}
    assert changed_parts(old, dict(old)) == []
    assert changed_parts(old, {**old, "params": "B", "output": "C"}) == ["params", "output"]
    new = {k: v for k, v in old.items() if k != "earlier_results.analyze"} | {"score": "s"}
    assert changed_parts(old, new) == ["score", "earlier_results.analyze"]


def test_changed_files_names_the_edited_added_and_dropped_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    evals, helper, gone = str(tmp_path / "my_evals.py"), str(tmp_path / "lib" / "helper.py"), "/elsewhere/old.py"
    assert changed_files({evals: "1", helper: "2"}, {evals: "1", helper: "3"}) == ["lib/helper.py"]
    assert changed_files({evals: "1", gone: "9"}, {evals: "2"}) == ["old.py", "my_evals.py"]  # outside: its name
    assert changed_files({evals: "1"}, {evals: "1"}) == []


def test_the_files_behind_a_steps_code_are_found_for_custom_and_prebuilt_steps() -> None:
    tone = PREBUILT["tone-scorer"].factory().steps[0]
    files = step_files(tone)
    assert any(path.endswith("prebuilt/tone.py") for path in files), files  # what its code digest was taken over
    custom = step_files(_step(3))  # this module's, and the test helpers it imports (the user's own modules)
    assert custom == {__file__: files_sha(__file__), str(Path(__file__).with_name("flow_helpers.py")):
                      files_sha(str(Path(__file__).with_name("flow_helpers.py")))}


def files_sha(path: str) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _step(limit: int, version: str = "1") -> Any:
    scorer = create_scorer("limited", version=version, generate_score=lambda ctx: float(len(ctx.run.output) <= limit),
                           options={"limit": limit})
    return scorer.steps[-1].with_source()


def _ctx(output: str) -> StepContext:
    return StepContext(run=ScorerInput(input="q", output=output))


def test_a_step_book_explains_each_miss_against_the_items_last_key(tmp_path: Path) -> None:
    step, ctx = _step(3), _ctx("xx")

    def note(step: Any, ctx: StepContext, hit: bool, item: str = "a", **kw: Any) -> str | None:
        ledger = CacheLedger(tmp_path, refresh=kw.pop("refresh", False))
        reason = ledger.step(step).note(item, step.cache_key(ctx), hit, lambda: step_parts(step, ctx), **kw)
        ledger.save()
        return reason

    assert note(step, ctx, hit=False) == NEVER
    assert note(step, ctx, hit=True) is None
    assert note(step, ctx, hit=False) == SAME_KEY  # the cache folder lost the result
    assert note(step, ctx, hit=False, refresh=True) == REFRESH
    assert note(step, ctx, hit=False, chunk_changed=True) == CHUNK
    assert note(step, _ctx("xxx"), hit=False) == "output"
    assert note(_step(4), _ctx("xxx"), hit=False) == "params"
    assert note(_step(4, version="2"), _ctx("xxx"), hit=False) == "version"
    assert note(step, ctx, hit=False, item="b") == NEVER  # another item has no earlier key
    # A hit on an older key (an edit reverted) is that item's last key from then on.
    assert note(step, ctx, hit=True) is None
    assert note(step, _ctx("xxxx"), hit=False) == "output"

    (record,) = (tmp_path / "keys").iterdir()
    text = record.read_text()
    assert "xxxx" not in text and "limited.generate_score" in text  # digests of the values, never the values
    data = json.loads(text)
    assert set(data["items"]) == {"a", "b"}
    assert len(data["configs"]) == 1  # configurations no item points at any more are dropped


def test_a_record_that_cannot_be_read_costs_its_explanations_not_the_run(tmp_path: Path) -> None:
    step, ctx = _step(3), _ctx("xx")
    ledger = CacheLedger(tmp_path, refresh=False)
    ledger.step(step).note("a", step.cache_key(ctx), False, lambda: step_parts(step, ctx))
    ledger.save()
    (record,) = (tmp_path / "keys").iterdir()
    record.write_text("{not json")
    again = CacheLedger(tmp_path, refresh=False)
    assert again.step(step).note("a", step.cache_key(ctx), False, lambda: step_parts(step, ctx)) == NEVER
    again.not_cached("x.generate_score", 3)
    again.save()
    lines = again.lines(["target", step.label, "x.generate_score"])
    assert lines == [{"step": step.label, "hits": 0, "misses": 1, "why": {NEVER: 1}},
                     {"step": "x.generate_score", "hits": 0, "misses": 3, "why": {UNCACHED: 3}}]
    assert cache_summary(lines[0]) == f"{step.label} 0 hit 1 miss: {NEVER} 1"
    assert json.loads(record.read_text())["items"]["a"][0] == step.cache_key(ctx)


@pytest.mark.usefixtures("prefect_harness")
def test_run_evals_explains_a_judged_run(judge: FakeOpenAIServer, workdir: dict[str, str]) -> None:
    items = rows(3)

    def run(**options: Any) -> dict[str, Any]:
        result = run_evals(items, scorers=[judge_scorer(judge, **options)], explain_cache=True, quiet=True, **workdir)
        assert result.cache is not None
        return {line["step"]: (line["hits"], line["why"]) for line in result.cache}

    from evalduck.flows import run_evals

    first = run()
    assert first["answer-relevancy-scorer.preprocess"] == (0, {NEVER: 3})
    assert first["answer-relevancy-scorer.generate_score"] == (0, {UNCACHED: 3})
    assert "target" not in first  # the items' own outputs: no target call
    assert all(hits == 3 for step, (hits, _) in run().items() if not step.endswith("generate_score"))
    third = run(model="openai/another-judge")
    assert third["answer-relevancy-scorer.preprocess"] == (0, {"judge": 3})
    assert third["answer-relevancy-scorer.generate_reason"] == (0, {"judge": 3})
    quiet = run_evals(items, scorers=[judge_scorer(judge)], quiet=True, **workdir)
    assert quiet.cache is None  # without the option: recorded, not returned


def test_a_target_miss_names_the_target_or_the_input(tmp_path: Path) -> None:
    from evalduck.flows.inputs.datasets import DatasetItem
    from evalduck.flows.inputs.targets import resolve_target

    def note(spec: str, question: str) -> str | None:
        target, item = resolve_target(spec), DatasetItem(item_id="a", input=question)
        ledger = CacheLedger(tmp_path, refresh=False)
        reason = ledger.target(target).note("a", target.cache_key(item), False, lambda: target_parts(target, item))
        ledger.save()
        return reason

    assert note("model:openai/one", "q?") == NEVER
    assert note("model:openai/two", "q?") == "target"  # model and settings; a callable's code is `code (file)`
    assert note("model:openai/two", "other q?") == "input"
