"""The project file (evalduck.toml or [tool.evalduck]): found by walking up as git finds .git, checked
against the run options it defaults, and the precedence CLI option > environment variable > file >
built-in default (flows/project/root.py, flows/project/file.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalduck.flows.config import EvalConfig
from evalduck.flows.project.file import FILE_KEYS, file_defaults, resolve
from evalduck.flows.project.root import ProjectFileError, find_project, project_root


def _project(tmp_path: Path, text: str, name: str = "evalduck.toml") -> Path:
    root = tmp_path / "proj"
    (root / "a" / "b").mkdir(parents=True)
    (root / name).write_text(text)
    return root


def test_found_from_a_subfolder_with_paths_against_the_root(tmp_path: Path) -> None:
    root = _project(tmp_path, 'dataset = "evals/data.jsonl"\ndb = "results/e.duckdb"\nconcurrency = 3\n'
                              'scorers = ["tone-scorer", {id = "textual-difference-scorer"}]\n')
    deep = root / "a" / "b"
    assert project_root(deep) == root
    values = file_defaults(deep)
    assert values["dataset"] == str(root / "evals" / "data.jsonl")
    assert values["db"] == str(root / "results" / "e.duckdb")
    assert values["concurrency"] == 3
    assert [s["id"] for s in values["scorers"]] == ["tone-scorer", "textual-difference-scorer"]
    assert "cache_dir" not in values  # unset keys stay unset: the built-in default decides


def test_pyproject_table_and_folders_without_one(tmp_path: Path) -> None:
    root = _project(tmp_path, '[project]\nname = "app"\n\n[tool.evalduck]\nname = "app-evals"\n', "pyproject.toml")
    (root / "a" / "pyproject.toml").write_text('[project]\nname = "inner"\n')  # no table: not a project root
    assert find_project(root / "a" / "b").root == root
    assert file_defaults(root / "a") == {"name": "app-evals"}
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert find_project(outside) is None and project_root(outside) == outside


def test_precedence_cli_then_env_then_file_then_default() -> None:
    file = {"judge_model": "file/model", "db": "/p/file.duckdb", "concurrency": 4, "name": "from-file"}
    env = {"EVALDUCK_JUDGE_MODEL": "env/model", "EVALDUCK_DB": "env.duckdb"}
    cli = {"judge_model": "cli/model"}
    got = resolve(cli, file, env)
    assert got["judge_model"] == "cli/model"  # CLI beats env
    assert got["db"] == "env.duckdb"  # env beats file
    assert got["concurrency"] == 4 and got["name"] == "from-file"  # file beats the default
    assert "retries" not in got and EvalConfig(dataset="d.jsonl", **got).retries == 3  # the default
    assert resolve({}, file, {"EVALDUCK_JUDGE_MODEL": " "})["judge_model"] == "file/model"  # blank env is unset


@pytest.mark.parametrize(("text", "expected"), [
    ("concurency = 3\n", ("unknown key `concurency`", "did you mean 'concurrency'?", "keys: dataset")),
    ("concurrency = 0\n", ("`concurrency`", "greater than or equal to 1", "got 0")),
    ('scorers = ["tone"]\n', ("`scorers.0.id` must be one of", "did you mean 'tone-scorer'?")),
    ("resume = 'x'\n", ("`resume` is said per run", "--resume")),
    ("name = \n", ("not valid TOML",)),
])
def test_a_bad_key_or_value_is_one_line_naming_file_and_key(tmp_path: Path, text: str, expected: tuple[str, ...]) -> None:
    root = _project(tmp_path, text)
    with pytest.raises(ProjectFileError) as caught:
        file_defaults(root / "a")
    message = str(caught.value)
    assert message.startswith(str(root / "evalduck.toml")) and "\n" not in message, message
    for part in expected:
        assert part in message, message


def test_both_files_is_refused_and_keys_are_the_run_options(tmp_path: Path) -> None:
    root = _project(tmp_path, 'name = "x"\n')
    (root / "pyproject.toml").write_text('[tool.evalduck]\nname = "y"\n')
    with pytest.raises(ProjectFileError, match="keep the settings in one of them"):
        find_project(root)
    assert set(FILE_KEYS) == set(EvalConfig.model_fields) - {"resume", "refresh"}
