"""What `evalduck init` writes into a project folder: its prefect.yaml, evalduck.toml and evals/ (an example
dataset, its README and a custom scorer), from the templates in flows/project/template/.

Nothing is written when any of the files exists (unless ``force``), so a second `init` never half-updates a
project. Standard library only besides the templates; the command is flows/cli/init.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from string import Template

from evalduck.errors import EvalduckError
from evalduck.flows.project.root import CONFIG_FILE, PYPROJECT, TOOL_TABLE, _tool_table

__all__ = ("EXAMPLE_DATASET", "InitError", "Init", "project_files", "write_project", "project_name", "SCORERS")

EXAMPLE_DATASET = "evals/example.jsonl"
# The scorers a new project runs (evalduck.toml and prefect.yaml list the same ones): the code scorers, the
# judge scorer (skipped until a judge model is set) and the project's own.
SCORERS = {  # id: what evalduck.toml says of it
    "tone-scorer": "",
    "textual-difference-scorer": "",
    "answer-relevancy-scorer": "an LLM judge: skipped until judge_model is set",
    "evals.my_evals:concise_scorer": "your own, in evals/my_evals.py",
}
PREFECT_VERSION = "3.9.1"  # the version prefect.yaml was checked with (pyproject's lower bound)


class InitError(EvalduckError, RuntimeError):
    """A file `init` would overwrite, or a folder it cannot write: one line naming it."""


@dataclass(frozen=True)
class Init:
    """What a project is made with: its folder, name, the dataset its deployments and `run` use (relative to
    the folder when inside it) and the judge model (None: the line is written commented out)."""

    root: Path
    name: str
    dataset: str = EXAMPLE_DATASET
    judge_model: str | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.name):  # written into YAML unquoted
            raise InitError(f"project name {self.name!r}: use lowercase letters, digits and dashes")


def project_name(folder: Path) -> str:
    """A run name from the folder's name: lowercase letters, digits and dashes ("evals" when none is left)."""
    return re.sub(r"[^a-z0-9]+", "-", folder.name.lower()).strip("-") or "evals"


def _template(name: str) -> Template:
    return Template(files("evalduck.flows.project.template").joinpath(name).read_text(encoding="utf-8"))


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string


def _yaml_string(value: str) -> str:
    return json.dumps(value)  # and a YAML double-quoted scalar


def project_files(init: Init) -> dict[Path, str]:
    """Each file's path (relative to the project folder) and content."""
    judge = (f"judge_model = {_toml_string(init.judge_model)}" if init.judge_model else
             '# judge_model = "openai/gpt-4o-mini"   # litellm model for judge scorers; its key in the environment')
    toml_scorers = "".join(f"    {_toml_string(sid) + ',':<34}{'  # ' + note if note else ''}\n".rstrip() + "\n"
                           for sid, note in SCORERS.items())
    toml = _template("evalduck.toml.tmpl").substitute(name=_toml_string(init.name), dataset=_toml_string(init.dataset),
                                                      judge_line=judge, scorers=toml_scorers)
    scorers = "".join(f"    - id: {_yaml_string(sid)}\n" for sid in SCORERS)
    yaml = _template("prefect.yaml.tmpl").substitute(name=init.name, prefect_version=PREFECT_VERSION, scorers=scorers,
                                                     dataset=_yaml_string(init.dataset))
    return {
        Path("prefect.yaml"): yaml,
        Path(CONFIG_FILE): toml,
        Path(EXAMPLE_DATASET): _template("example.jsonl").template,
        Path("evals/README.md"): _template("README.md").substitute(name=init.name),
        Path("evals/my_evals.py"): _template("my_evals.py.tmpl").template,
        # A regular package: it wins over an installed `evals` distribution, which a namespace package would not.
        Path("evals/__init__.py"): '"""This project\'s evals (`evalduck init`): scorers imported as evals.<module>:<name>."""\n',
    }


def write_project(init: Init, force: bool = False) -> list[Path]:
    """Write the project's files; the paths written.

    Raises:
        InitError: a file exists (and not ``force``), pyproject.toml already holds evalduck's settings, or
            the folder cannot be written.
    """
    planned = project_files(init)
    pyproject = init.root / PYPROJECT
    if pyproject.is_file() and _tool_table(pyproject) is not None:
        raise InitError(f"{pyproject} already holds a [{TOOL_TABLE}] table: this folder is an evalduck project "
                        f"(remove the table to have `init` write {CONFIG_FILE} instead)")
    if not force:
        for rel in planned:
            if (init.root / rel).exists():
                raise InitError(f"{init.root / rel} exists: nothing was written (use --force to overwrite it)")
    written = []
    try:
        for rel, text in planned.items():
            path = init.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    except OSError as exc:
        raise InitError(f"cannot write {exc.filename or init.root}: {exc.strerror or exc}") from None
    return written
