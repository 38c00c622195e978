"""A YAML file read with the line of every value, so that an error found later (by pydantic, or by a rule
over several values) names the line a user has to edit, as dataset errors do.

PyYAML's safe loader builds the data; its composer, run over the same text, gives each node its start mark.
``Located.line(path)`` walks the node tree by the same keys and indexes a pydantic error's ``loc`` has.
``LocatedValue`` is the same data given as a value (a flow's parameter, no file): it names a value by its path,
``sweep parameter axes.target[1]``, so the checks written against ``Located`` name problems either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evalduck.errors import EvalduckError

__all__ = ("Located", "LocatedValue", "Where", "YamlFileError", "read_yaml")


class YamlFileError(EvalduckError, ValueError):
    """A file that is not YAML (or not readable): ``where`` names the file and line, ``problem`` says what."""

    def __init__(self, where: str, problem: str) -> None:
        self.where, self.problem = where, problem
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class Located:
    """A YAML document's data and, for any path into it, the line it starts on."""

    path: Path
    data: Any
    root: yaml.Node | None

    def line(self, path: Sequence[str | int]) -> int:
        """The 1-based line of the value at ``path`` (keys and list indexes), else of its nearest parent that
        exists (a missing key is reported at the mapping that lacks it)."""
        node = self.root
        if node is None:
            return 1
        best = node.start_mark.line + 1
        for part in path:
            child = _child(node, part)
            if child is None:
                break
            node = child
            best = node.start_mark.line + 1
        return best

    def where(self, path: Sequence[str | int]) -> str:
        """``sweep.yaml line 7``: the file as the user named it and the line of ``path``."""
        return f"{self.path} line {self.line(path)}"

    def where_all(self, paths: Sequence[Sequence[str | int]]) -> str:
        """``sweep.yaml lines 7, 8``: the lines of several values (one candidate of a product of axes)."""
        lines = sorted({self.line(path) for path in paths})
        return f"{self.path} line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"

    @property
    def source(self) -> str | None:
        """The file, as the user named it."""
        return str(self.path)

    @property
    def stem(self) -> str:
        """The name the data goes by when it names none itself: the file's stem."""
        return self.path.stem


@dataclass(frozen=True)
class LocatedValue:
    """Data given as a value, not read from a file: a problem is named by the path to its value,
    ``sweep parameter axes.target[1]``, where ``Located`` names a file's line."""

    label: str  # what the data is to the user: "sweep parameter"
    data: Any
    stem: str  # the name the data goes by when it names none itself
    source: str | None = None  # no file

    def where(self, path: Sequence[str | int]) -> str:
        """``sweep parameter axes.target[1]``: the label and the path (the label alone for the whole value)."""
        dotted = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")
        return f"{self.label} {dotted}" if dotted else self.label

    def where_all(self, paths: Sequence[Sequence[str | int]]) -> str:
        """``sweep parameter axes.target[0], axes.target_system_prompt[1]``."""
        named = [self.where(path).removeprefix(self.label).strip() for path in paths]
        return f"{self.label} {', '.join(named)}" if named else self.label


Where = Located | LocatedValue  # the data of a file or of a value, and how its problems name a place in it


def _child(node: yaml.Node, part: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return value  # type: ignore[no-any-return]
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return node.value[part]  # type: ignore[no-any-return]
    return None


def read_yaml(path: Path) -> Located:
    """``path`` parsed (one document, safe types only) with its node tree for lines.

    Raises:
        YamlFileError: the file is missing or unreadable, or is not YAML (with the line of the problem).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise YamlFileError(str(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise YamlFileError(str(path), f"cannot be read ({exc})") from None
    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise YamlFileError(f"{path}{line}", f"not valid YAML ({exc.problem or exc.context})") from None
    except yaml.YAMLError as exc:
        raise YamlFileError(str(path), f"not valid YAML ({exc})") from None
    return Located(path=path, data=data, root=root)
