"""Step cache keys: stable across runs, sensitive to exactly the parameters each step uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalduck import scorers
from evalduck.scorers import StepContext, create_answer_relevancy_scorer, create_textual_difference_scorer
from evalduck.scorers._cache_key import canonical_json, hash_components, without_excluded

RUN = {"input": "How do I cancel?", "output": "Go to Billing. Press Cancel.", "groundTruth": "Billing > Cancel."}
RESULTS = {
    "preprocess": {"statements": ["Go to Billing.", "Press Cancel."]},
    "analyze": {"results": [{"result": "yes", "reason": "r"}, {"result": "unsure", "reason": "r"}]},
    "generate_score": 0.65,
}


def keys(scorer: Any, run: dict[str, Any] = RUN, results: dict[str, Any] = RESULTS, score: float = 0.65) -> dict[str, str]:
    return {s.name: s.cache_key(scorer.context_for(s.name, run, results, score)) for s in scorer.steps}


def relevancy(**options: Any) -> Any:
    return create_answer_relevancy_scorer(**{"model": "openai/judge-a", **options})


def test_canonical_json_is_order_independent() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'
    assert hash_components({"x": 1, "y": 2}) == hash_components({"y": 2, "x": 1})
    with pytest.raises(ValueError):
        canonical_json(float("nan"))


def test_canonical_json_with_a_default_writes_any_data() -> None:
    """The lenient form, for item ids and target keys over whatever a row holds (strict for cache keys)."""
    with pytest.raises(TypeError):
        canonical_json({"p": Path("x")})
    assert canonical_json({"p": Path("x"), "n": float("nan"), "é": "ü"}, default=str) == '{"n":NaN,"p":"x","é":"ü"}'
    assert scorers.canonical_json is canonical_json


def test_keys_are_sha256_hex_and_stable() -> None:
    first, second = keys(relevancy()), keys(relevancy())
    assert first == second
    assert all(len(k) == 64 and int(k, 16) >= 0 for k in first.values())
    assert len(set(first.values())) == 4  # every step has its own key


def test_run_id_and_call_settings_are_excluded() -> None:
    base = keys(relevancy())
    assert keys(relevancy(), run={**RUN, "runId": "another-run"}) == base
    other_call = relevancy(timeout=5, retries=9, api_base="http://127.0.0.1:9/v1", extra={"api_key": "sk-xyz12345678"})
    assert keys(other_call) == base


def test_uncertainty_weight_changes_only_score_and_reason() -> None:
    base, changed = keys(relevancy()), keys(relevancy(uncertainty_weight=0.5), score=0.75)
    assert changed["preprocess"] == base["preprocess"] and changed["analyze"] == base["analyze"]
    assert changed["generate_score"] != base["generate_score"]
    assert changed["generate_reason"] != base["generate_reason"]  # through the score
    same_score = keys(relevancy(uncertainty_weight=0.5), score=0.65)
    assert same_score["generate_reason"] == base["generate_reason"]


def test_scale_changes_only_generate_score_of_code_scorers() -> None:
    run, results = {"input": "a", "output": "b"}, {"analyze": {"ratio": 0.5, "changes": 1, "lengthDiff": 0, "confidence": 1}}
    one = keys(create_textual_difference_scorer(), run, results)
    ten = keys(create_textual_difference_scorer(scale=10), run, results)
    assert one["analyze"] == ten["analyze"] and one["generate_score"] != ten["generate_score"]


@pytest.mark.parametrize("change", [{"model": "openai/judge-b"}, {"temperature": 0.7}, {"max_tokens": 100}, {"extra": {"top_p": 0.5}}])
def test_judge_settings_change_only_judge_steps(change: dict[str, Any]) -> None:
    base, changed = keys(relevancy()), keys(relevancy(**change))
    for name in ("preprocess", "analyze", "generate_reason"):
        assert changed[name] != base[name], name
    assert changed["generate_score"] == base["generate_score"]


def test_run_fields_change_every_key() -> None:
    base = keys(relevancy())
    for field, value in [("output", "Other."), ("input", "Other?"), ("groundTruth", "x"), ("requestContext", {"tier": "pro"})]:
        changed = keys(relevancy(), run={**RUN, field: value})
        assert all(changed[n] != base[n] for n in base), field


def test_earlier_results_matter_later_ones_do_not() -> None:
    scorer = relevancy()
    analyze = scorer.step("analyze")
    ctx = scorer.context_for("analyze", RUN, RESULTS)
    other_statements = scorer.context_for("analyze", RUN, {**RESULTS, "preprocess": {"statements": ["x"]}})
    assert analyze.cache_key(ctx) != analyze.cache_key(other_statements)
    with_later = StepContext(run=ctx.run, results={**ctx.results, "generate_score": 0.1}, score=0.1)
    assert analyze.cache_key(with_later) == analyze.cache_key(ctx)


def test_key_components_are_named() -> None:
    scorer = relevancy()
    parts = scorer.step("generate_reason").key_components(scorer.context_for("generate_reason", RUN, RESULTS, 0.65))
    assert {"scorer_id", "scorer_version", "step", "params", "run", "earlier_results", "score", "judge"} <= parts.keys()
    assert parts["judge"]["model"] == "openai/judge-a" and "timeout" not in parts["judge"]
    assert "run_id" not in parts["run"]


def test_without_excluded_drops_secrets_and_call_settings() -> None:
    kept = without_excluded({"top_p": 1, "api_key": "k", "aws_secret_access_key": "s", "timeout": 3, "seed": 7})
    assert kept == {"top_p": 1, "seed": 7}


def _tone_keys() -> dict[str, str]:
    return keys(scorers.create_tone_scorer())


def test_a_prebuilt_scorers_keys_follow_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edited module (or a helper it imports) changes the keys; reverted, the keys are the old ones again;
    another scorer's module is not part of them. A custom step is keyed on its own module's whole source."""
    from evalduck.scorers import _cache_key

    read = _cache_key._read_bytes
    before = _tone_keys()

    def edited(name: str) -> Any:
        target = _cache_key._package_file(name)

        def reader(path: Path) -> bytes:
            return read(path) + (b"\n# edited\n" if path == target else b"")
        return reader

    for module, changes in [("evalduck.scorers.prebuilt.tone", True), ("evalduck.scorers.prebuilt._code", True),
                            ("evalduck.scorers._messages", True), ("evalduck.scorers.prebuilt.bias", False)]:
        monkeypatch.setattr(_cache_key, "_read_bytes", edited(module))
        _cache_key._FILES.clear()  # what this process read of the sources, read again
        after = _tone_keys()
        assert all((after[step] != before[step]) is changes for step in before), module
        monkeypatch.setattr(_cache_key, "_read_bytes", read)
        _cache_key._FILES.clear()
        assert _tone_keys() == before  # reverted: the cached results are found again
    custom = scorers.create_scorer("mine", generate_score=lambda ctx: 1.0)
    # a custom step is keyed on its module's whole source (here this test file, a module of the user's own)
    custom_code = custom.step("generate_score").key_components(custom.context_for("generate_score", RUN))["code"]
    own = _cache_key.module_digest(__name__)
    assert own is not None and custom_code == own.digest and str(Path(__file__).resolve()) in own.files
    tone = scorers.create_tone_scorer().step("analyze")
    assert tone.key_components(scorers.create_tone_scorer().context_for("analyze", RUN))["code"] == tone.code


def test_a_prebuilt_scorers_keys_are_the_same_in_every_process() -> None:
    import subprocess
    import sys

    code = ("import json; import evalduck.scorers as scorers; s = scorers.create_tone_scorer(); "
            f"print(json.dumps({{st.name: st.cache_key(s.context_for(st.name, {RUN!r}, {RESULTS!r}, 0.65)) for st in s.steps}}))")
    printed = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
               for _ in range(2)]
    assert printed[0] == printed[1]
    assert json.loads(printed[0]) == _tone_keys()
