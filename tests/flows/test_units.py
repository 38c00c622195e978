"""The flow's pieces on their own (no Prefect server): cache key hand-over, transient-error rule, rate
limiter schedule, chunk keys, artifact keys and the comparison markdown, parameter reporting, registry,
the deployment flows' parameter schema."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from evalduck.flows.engine.tasks import RateLimiter, StepCacheKey, chunk_key, is_transient
from evalduck.flows.inputs.registry import build_scorers
from evalduck.flows.inputs.targets import TargetError, resolve_target
from evalduck.flows.report.artifacts import artifact_key, comparison_markdown, summary_rows, summary_table
from evalduck.scorers import PREBUILT, InvalidJudgeAnswer, JudgeConfigError, JudgeTransientError


def test_cache_policy_hands_over_the_scorers_key() -> None:
    policy = StepCacheKey()
    assert policy.compute_key(None, {"cache_key": "abc", "job": object()}, {}) == "abc"  # type: ignore[arg-type]


def test_only_transient_errors_are_retried() -> None:
    assert is_transient(JudgeTransientError("429", retry_after=2.0))
    assert is_transient(InvalidJudgeAnswer("bad JSON twice"))
    assert is_transient(TimeoutError()) and is_transient(ConnectionResetError())
    assert not is_transient(JudgeConfigError("401 bad key"))
    assert not is_transient(ValueError("a bug"))


def test_rate_limiter_spaces_acquisitions_evenly() -> None:
    async def schedule() -> float:
        limiter = RateLimiter(rpm=60_000)  # one slot per millisecond
        start = asyncio.get_running_loop().time()
        await asyncio.gather(*(limiter.acquire() for _ in range(5)))
        return limiter._next - start

    assert asyncio.run(schedule()) >= 0.005  # the 5th slot is at least 5 intervals after the start
    assert RateLimiter(None).interval == 0.0


def test_chunk_key_changes_with_any_item() -> None:
    keys = ["a" * 64, "b" * 64]
    assert chunk_key(keys) == chunk_key(list(keys))
    assert chunk_key(keys) != chunk_key(["a" * 64, "c" * 64])


def test_artifact_keys_and_comparison_markdown() -> None:
    assert artifact_key("Nightly Run #2", "summary") == "evalduck-nightly-run-2-summary"
    assert artifact_key(None, "progress") == "evalduck-unnamed-progress"
    rows = [{"scorer_id": "tone-scorer", "mean_a": 0.8, "mean_b": 0.7, "mean_delta": -0.1, "ci_low": -0.15,
             "ci_high": -0.05, "n_paired": 20, "n_improved": 2, "n_regressed": 15, "warning": None}]
    text = comparison_markdown(rows, "run-a", "run-b", "nightly")
    assert "| tone-scorer | 0.800 | 0.700 | -0.100 | [-0.150, -0.050] | 20 | 2 | 15 |  |" in text
    assert summary_rows([{"scorer_id": "t", "mean_score": 0.12345, "n_scored": 3, "n_errors": 1, "n_skipped": 2,
                          "prompt_tokens": 10, "completion_tokens": 5, "cost": None, "higher_is_better": True}]) == [
        {"scorer": "t", "higher_is_better": True, "mean": 0.12345, "scored": 3, "errored": 1, "skipped": 2,
         "judge_tokens": 15, "judge_cost_usd": None}]
    # The numbers are rounded only where people read them: the UI's summary table.
    exact = summary_rows([{"scorer_id": "t", "mean_score": 0.96996, "cost": 0.0000123456}])
    assert exact[0]["mean"] == 0.96996 and exact[0]["judge_cost_usd"] == 0.0000123456
    assert summary_table(exact)[0]["mean"] == 0.97 and summary_table(exact)[0]["judge_cost_usd"] == 0.000012
    # A lower-is-better scorer says so in the comparison, where its rise is the regression.
    lower = [{**rows[0], "scorer_id": "bias-scorer", "higher_is_better": False}]
    assert "| bias-scorer \\(lower is better\\) | 0.800 |" in comparison_markdown(lower, "a", "b", None)
    assert "a rise is the regression" in comparison_markdown(lower, "a", "b", None)


def test_comparison_markdown_shows_user_strings_as_text() -> None:
    """A `|` or a line break in a scorer id or note stays in its cell; markdown and HTML in a name are text."""
    rows = [{"scorer_id": "a|b\nc", "mean_a": 0.5, "mean_b": 0.5, "mean_delta": 0.0, "ci_low": 0.0, "ci_high": 0.0,
             "n_paired": 2, "n_improved": 0, "n_regressed": 0, "warning": "run B is *running*"}]
    text = comparison_markdown(rows, "run`a", "run-b", "<b>nightly</b> [x](http://h) # 1")
    assert text.splitlines()[0] == r"# \<b\>nightly\</b\> \[x\]\(http://h\) \# 1: this run vs the previous one"
    assert "Previous run ``run`a``, this run `run-b`." in text
    (row,) = [line for line in text.splitlines() if line.startswith("| a")]
    assert row.startswith(r"| a\|b\\nc | 0.500 |")  # shows as a|b\nc, in one cell
    assert row.endswith(r"| run B is \*running\* |")
    assert row.replace("\\|", "").count("|") == 10  # nine cells, none split


def test_registry_builds_with_options_and_skips_without_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALDUCK_JUDGE_MODEL", raising=False)
    built, skipped = build_scorers([{"id": "tone-scorer", "options": {"scale": 2}}, "answer-relevancy-scorer"])
    assert [s.id for s in built] == ["tone-scorer"] and built[0].options["scale"] == 2
    assert [s.scorer_id for s in skipped] == ["answer-relevancy-scorer"]
    assert "EVALDUCK_JUDGE_MODEL" in skipped[0].reason and "--judge-api-base" in skipped[0].reason
    built, skipped = build_scorers(["answer-relevancy-scorer"], judge_model="openai/x", judge_api_base="http://h/v1")
    assert not skipped and built[0].judge is not None and built[0].judge.api_base == "http://h/v1"
    with pytest.raises(ValueError, match="given twice"):
        build_scorers(["tone-scorer", "tone-scorer"])
    with pytest.raises(ValueError):
        build_scorers([{"id": "tone-scorer", "options": {"scale": -1}}])


def test_the_runs_judge_settings_fill_in_only_what_a_specs_options_leave_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model in the options' `judge` counts as given (not skipped, not replaced by the run's), and so does a
    camelCase `apiBase`."""
    monkeypatch.delenv("EVALDUCK_JUDGE_MODEL", raising=False)
    own = {"id": "faithfulness-scorer", "options": {"judge": {"model": "openai/own", "api_base": "http://own/v1"}}}
    built, skipped = build_scorers([own])
    assert not skipped and built[0].judge is not None and built[0].judge.model == "openai/own"
    monkeypatch.setenv("EVALDUCK_JUDGE_MODEL", "openai/env")
    built, _ = build_scorers([own], judge_model="openai/run", judge_api_base="http://run/v1")
    assert built[0].judge is not None and (built[0].judge.model, built[0].judge.api_base) == ("openai/own", "http://own/v1")
    camel = {"id": "bias-scorer", "options": {"apiBase": "http://own/v1"}}
    built, _ = build_scorers([camel], judge_api_base="http://run/v1")
    assert built[0].judge is not None and (built[0].judge.model, built[0].judge.api_base) == ("openai/env", "http://own/v1")


def test_scorer_ids_come_from_one_table() -> None:
    """evalduck.scorers.PREBUILT is the list: the spec's choices, the defaults, the registry, the CLI help and the
    ids prefect.yaml's `scorers` anchor lists (kept there as data) all agree with it."""
    import typer

    from evalduck.flows.cli import app
    from evalduck.flows.config import DEFAULT_SCORERS, SCORER_IDS, EvalConfig, ScorerSpec

    ids = tuple(PREBUILT)
    assert SCORER_IDS == ids and DEFAULT_SCORERS == ids[:3] == ("answer-relevancy-scorer", "tone-scorer", "textual-difference-scorer")
    # The UI form's scorer id is a text field (an import path is a scorer too); the Scorers field's help
    # lists the ids, once for the list (tests/flows/test_run_form.py).
    id_field = ScorerSpec.model_json_schema()["properties"]["id"]
    scorers_help = EvalConfig.model_json_schema()["properties"]["scorers"]["description"]
    assert id_field["type"] == "string" and all(i in scorers_help for i in ids)
    with pytest.raises(ValueError, match="must be one of 'answer-relevancy-scorer', 'tone-scorer', 'textual.*, or an "
                                         "import path 'module:attribute'"):
        build_scorers(["tone"])
    built, skipped = build_scorers(list(ids))
    assert sorted([s.id for s in built] + [s.scorer_id for s in skipped]) == sorted(ids)
    assert all(s.version == PREBUILT[s.scorer_id].version for s in skipped)
    run = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    (scorer_help,) = [p.help for p in run.params if p.name == "scorer"]
    assert f"A prebuilt scorer id ({', '.join(ids)}) or an import path" in scorer_help
    definitions = yaml.safe_load((Path(__file__).parents[2] / "prefect.yaml").read_text())["definitions"]
    assert [s["id"] for s in definitions["scorers"]] and {s["id"] for s in definitions["scorers"]} <= set(ids)


def test_target_errors_keep_the_target_apart_from_the_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_agent.py").write_text("raise RuntimeError('no key')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TargetError) as err:  # any failure while importing, not only ImportError
        resolve_target("broken_agent:answer")
    assert (err.value.spec, err.value.problem) == ("broken_agent:answer",
                                                   "cannot import module 'broken_agent' (RuntimeError: no key)")
    assert str(err.value) == "target 'broken_agent:answer': cannot import module 'broken_agent' (RuntimeError: no key)"
    with pytest.raises(TargetError, match=r"^target 'model: ': needs a litellm model after 'model:'"):
        resolve_target("model: ")


@pytest.mark.parametrize(("on_path", "expected"), [
    (True, "the current folder {here} is on the import path, but it holds no no_such_agent.py or no_such_agent/"),
    (False, "./my_agent.py is here, but the current folder is not on the import path (sys.path): add it with "
            "PYTHONPATH=."),
], ids=["folder-on-the-path", "folder-not-on-the-path"])
def test_a_target_module_that_is_not_found_says_where_imports_look(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_path: bool, expected: str) -> None:
    (tmp_path / "my_agent.py").write_text("def answer(q):\n    return q\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if p not in ("", str(tmp_path))])
    if on_path:
        monkeypatch.syspath_prepend(str(tmp_path))
    spec = "no_such_agent:answer" if on_path else "my_agent:answer"
    with pytest.raises(TargetError) as err:
        resolve_target(spec)
    assert expected.format(here=tmp_path) in err.value.problem
    with pytest.raises(TargetError, match=r"give the module's import name, not its file: 'agents.my_agent:answer'"):
        resolve_target("./agents/my_agent.py:answer")


def test_in_memory_rows_are_reported_not_sent() -> None:
    from evalduck.flows import run_evals

    reported = run_evals.serialize_parameters(
        {"data": [{"input": "q"}] * 3, "scorers": ["tone-scorer"], "on_item_complete": print})
    assert reported["data"] == "<3 rows in memory>"
    assert reported["on_item_complete"].startswith("<callable")


def test_heartbeats_only_on_a_server_the_user_names_or_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Heartbeats feed Prefect's zombie-flow automation, which servers evalduck starts do not have; a sync flow
    joins Prefect's one-second-step heartbeat thread on exit (0-1 s per run)."""
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    from evalduck.flows.run.scope import heartbeat_settings

    for name in ("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY"):
        monkeypatch.delenv(name, raising=False)
    default = get_current_settings().flows.heartbeat_frequency
    url = "http://127.0.0.1:4200/api"
    with temporary_settings(updates={PREFECT_API_URL: None}), heartbeat_settings():
        assert get_current_settings().flows.heartbeat_frequency is None
    with temporary_settings(updates={PREFECT_API_URL: url}), heartbeat_settings(own_server=True):
        assert get_current_settings().flows.heartbeat_frequency is None
    with temporary_settings(updates={PREFECT_API_URL: url}), heartbeat_settings():
        assert get_current_settings().flows.heartbeat_frequency == default == 180
    monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "180")  # the user asked for them
    with temporary_settings(updates={PREFECT_API_URL: url}), heartbeat_settings(own_server=True):
        assert get_current_settings().flows.heartbeat_frequency == default
    assert get_current_settings().flows.heartbeat_frequency == default


def test_deployment_flows_have_no_required_parameter() -> None:
    """The Prefect UI's Run -> Quick run creates a run at once only when the flow's parameter schema lists
    no required parameter; otherwise it opens a "Run Deployment" dialog. `config` defaults to the demo eval."""
    from evalduck.flows.config import DEMO_CONFIG
    from evalduck.flows.eval_flow import run_eval_config
    from evalduck.flows.regression_flow import regression_check

    for deployed in (run_eval_config, regression_check):
        schema = deployed.parameters.model_dump()
        assert not schema.get("required"), f"{deployed.name}: {schema.get('required')}"
        assert schema["properties"]["config"]["default"] == DEMO_CONFIG.model_dump(mode="json")
        assert deployed.validate_parameters({})["config"] == DEMO_CONFIG
    assert (Path(__file__).resolve().parents[2] / DEMO_CONFIG.dataset).is_file()
    assert DEMO_CONFIG.name  # the regression check needs a run name


def test_a_mistyped_scorer_id_gets_a_suggestion_from_python_too() -> None:
    from evalduck.flows.inputs.registry import build_scorers
    from evalduck.scorers import ConfigError

    with pytest.raises(ConfigError, match=r"got 'tone-scorr'; did you mean 'tone-scorer'\?$"):
        build_scorers(["tone-scorr"])
