"""Step cache keys: sha256 over the canonical JSON of named components.

Everything that can change a step's result is a component; what cannot (run id, timeouts, retries,
concurrency, API keys, api_base, clients) is left out, so keys are stable across runs and machines.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

__all__ = (
    "KEY_FORMAT_VERSION",
    "EXCLUDED_SETTINGS",
    "canonical_json",
    "hash_components",
    "source_digest",
    "without_excluded",
)

logger = logging.getLogger("evalduck.scorers.cache_key")

KEY_FORMAT_VERSION = 1

# Settings that cannot change what a judge answers, or must never be stored: never in a key.
EXCLUDED_SETTINGS: frozenset[str] = frozenset(
    {
        "run_id",
        "timeout",
        "retries",
        "num_retries",
        "max_retries",
        "concurrency",
        "api_key",
        "api_base",
        "base_url",
        "api_version",
        "organization",
        "headers",
        "extra_headers",
        "client",
        "metadata",
    }
)


def canonical_json(value: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """Sorted keys, no whitespace, non-ASCII kept: equal values always give the same text.

    Without ``default`` (cache keys) the value must be plain JSON: a value json cannot write, NaN or an
    infinity raises. With one (``default=str`` for item ids and target keys, over whatever a dataset row
    holds) values json cannot write go through it, and NaN and infinities are written as ``NaN`` and
    ``Infinity``, as ``json.dumps`` does by default.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default, allow_nan=default is not None
    )


def without_excluded(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` minus the excluded names, and minus anything that looks like a secret."""
    return {
        k: v
        for k, v in settings.items()
        if k not in EXCLUDED_SETTINGS and not any(s in k.lower() for s in ("key", "token", "secret", "password"))
    }


def hash_components(components: Mapping[str, Any]) -> str:
    """sha256 hex of the components' canonical JSON, with the key format version added."""
    text = canonical_json({"key_format": KEY_FORMAT_VERSION, **components})
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("cache key %s from %s", key, text[:2000])
    return key


_PACKAGE = __name__.rpartition(".")[0]  # "evalduck.scorers"
_ROOT = Path(__file__).resolve().parent  # this package's folder: module names map to files in it


def _source_file(module: str) -> Path | None:
    """The source file of a ``scorers`` module (``evalduck.scorers.prebuilt._judged`` -> ``prebuilt/_judged.py``), found
    without importing anything; None when there is no such module."""
    parts = module.split(".")[_PACKAGE.count(".") + 1:]
    for path in (_ROOT.joinpath(*parts).with_suffix(".py"), _ROOT.joinpath(*parts, "__init__.py")):
        if parts and path.is_file():
            return path
    return None


def _read_source(module: str) -> bytes | None:
    """The bytes of ``module``'s source file; None when it has none (e.g. installed as bytecode only)."""
    path = _source_file(module)
    return path.read_bytes() if path is not None else None


def _imported(module: str, source: bytes) -> set[str]:
    """The ``scorers`` modules ``module``'s code imports (anywhere in it, functions included), by name: for
    ``from a.b import c`` the module ``a.b``, and ``a.b.c`` when that is a module too. Parent packages'
    ``__init__`` files are not counted: importing ``a.b.c`` loads them, but the step's logic is not in them."""
    package = module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, one level up per extra dot
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found
            if name.startswith(_PACKAGE + ".") and not name.startswith(_PACKAGE + ".testing")
            and _source_file(name) is not None}


@cache
def _parsed(module: str) -> tuple[bytes, frozenset[str]] | None:
    """``module``'s source and the ``scorers`` modules it imports, read once per process: the scorers of a run
    share most of their closure (the core modules), which is then parsed once, not once per scorer."""
    source = _read_source(module)
    return None if source is None else (source, frozenset(_imported(module, source)))


@cache
def source_digest(module: str) -> str | None:
    """sha256 over the source of ``module`` and of every ``scorers`` module its code imports, transitively
    (found by reading the source, not by running it; computed once per process): a prebuilt scorer's steps
    are keyed on the code that computes them, so an edited and then reverted formula is computed again and
    then served from the cache again. The closure is what can change a result: the scorer's module, the
    prebuilt helpers it uses (``_judged``, ``_text``...) and the core it builds on (``_step``, ``_judge``,
    ``_messages``...); an edit to another scorer's module changes no key of this one. None when a module in
    it has no source file (the scorer's version alone keys it then)."""
    seen: dict[str, bytes] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        read = _parsed(name)
        if read is None:
            return None
        seen[name], imports = read
        todo.extend(imports - seen.keys())
    digest = hashlib.sha256()
    for name in sorted(seen):
        digest.update(f"{name}\0{len(seen[name])}\0".encode())
        digest.update(seen[name])
    return digest.hexdigest()


def _own_file(module: str) -> Path | None:
    """The source file of an already imported module of the user's own (not stdlib, site-packages or
    evalduck); None otherwise. Only ``sys.modules`` is read: nothing is imported here."""
    import sys

    mod = sys.modules.get(module)
    file = getattr(mod, "__file__", None)
    if not file or not str(file).endswith(".py"):
        return None
    path = Path(file).resolve()
    text = str(path)
    if "site-packages" in text or "dist-packages" in text or module.split(".")[0] == "evalduck":
        return None
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    if any(path.is_relative_to(p) for p in prefixes) or module.split(".")[0] in sys.stdlib_module_names:
        return None
    return path if path.is_file() else None


@cache
def user_module_digest(module: str) -> str | None:
    """sha256 over the whole source file of the user's module ``module`` and of the user's own modules it
    imports, transitively (cycles end: each module is read once); computed once per process. A changed
    constant beside an unchanged function changes it, as does a comment. None when ``module`` has no file
    of the user's own (then the function's own source keys it, see ``code_digest``)."""
    if _own_file(module) is None:
        return None
    seen: dict[str, bytes] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _own_file(name)
        if path is None:
            continue
        seen[name] = path.read_bytes()
        try:
            tree = ast.parse(seen[name])
        except SyntaxError:
            continue
        package = name.split(".")[:-1] if not path.name == "__init__.py" else name.split(".")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                todo.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                todo.append(base)
                todo.extend(f"{base}.{alias.name}" for alias in node.names)
    digest = hashlib.sha256()
    for name in sorted(seen):
        digest.update(f"{name}\0{len(seen[name])}\0".encode())
        digest.update(seen[name])
    return digest.hexdigest()


def code_digest(fn: Callable[..., Any]) -> str | None:
    """The digest that keys a custom step function: its module's (``user_module_digest``), else the digest
    of the function's own source (a notebook cell, ``python -c``), else None."""
    import inspect

    module = getattr(fn, "__module__", None) or ""
    found = user_module_digest(module) if module else None
    if found is not None:
        return found
    try:
        return hashlib.sha256(inspect.getsource(fn).encode("utf-8")).hexdigest()
    except (OSError, TypeError):
        return None
