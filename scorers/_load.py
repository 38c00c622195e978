"""Custom scorers by import path (SCORERS.md 0.7): ``mypkg.evals:strict_tone`` in the CLI, a config or the
UI form, where a prebuilt id would go."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalduck.scorers._scorer import Scorer

__all__ = ("load_scorer", "locate_scorer")


@contextmanager
def _working_directory_importable() -> Iterator[None]:
    """The working directory on sys.path while importing (as `python -c` has it), and no longer after."""
    here = Path.cwd().resolve()
    if any(Path(entry or ".").resolve() == here for entry in sys.path):
        yield
        return
    sys.path.insert(0, os.fspath(here))
    try:
        yield
    finally:
        if os.fspath(here) in sys.path:
            sys.path.remove(os.fspath(here))


def locate_scorer(path: str) -> Scorer | Callable[..., Any]:
    """The ``Scorer`` or scorer factory that ``module.path:attribute`` names (the attribute may be dotted),
    so a caller can read a factory's ``needs_judge`` before building it.

    Raises:
        ValueError: no single colon, a module that does not import, a missing attribute, or one that is
            neither a Scorer nor callable; each names the path.
    """
    if not isinstance(path, str) or path.count(":") != 1:
        raise ValueError(f"scorer {path!r}: expected 'module.path:attribute' (one colon), e.g. 'mypkg.evals:make_scorer'")
    module_name, attr = (part.strip() for part in path.split(":"))
    if not module_name or not attr:
        raise ValueError(f"scorer {path!r}: expected 'module.path:attribute', with both parts")
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        dotted = module_name.removesuffix(".py").replace("\\", "/").strip("./").replace("/", ".")
        raise ValueError(f"scorer {path!r}: give the module's import name, not its file: '{dotted}:{attr}'")
    try:
        with _working_directory_importable():
            obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"scorer {path!r}: cannot import module {module_name!r} ({exc}); the working directory "
                         f"{Path.cwd()} and PYTHONPATH are searched") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"scorer {path!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not isinstance(obj, Scorer) and not callable(obj):
        raise ValueError(f"scorer {path!r}: {attr!r} is a {type(obj).__name__}, not a Scorer or a function that returns one")
    return obj


def load_scorer(path: str, options: Mapping[str, Any] | None = None) -> Scorer:
    """The scorer ``path`` names: a ``Scorer`` as it is (it takes no options), or a factory's result,
    ``factory(options)`` with options and ``factory()`` without. Errors inside the factory propagate.

    Example:
        >>> load_scorer("scorers:create_textual_difference_scorer", {"scale": 2}).options
        {'scale': 2.0}
    """
    if options is not None and not isinstance(options, Mapping):
        raise ValueError(f"scorer {path!r}: options must be a mapping, got {type(options).__name__}")
    obj = locate_scorer(path)
    if isinstance(obj, Scorer):
        if options:
            raise ValueError(f"scorer {path!r} is a Scorer, built already: it takes no options (got "
                             f"{', '.join(map(str, options))}); name a function that builds it from options instead")
        return obj
    scorer = obj(dict(options)) if options else obj()
    if not isinstance(scorer, Scorer):
        raise ValueError(f"scorer {path!r}: the factory returned a {type(scorer).__name__}, not a Scorer")
    return scorer
