"""Step cache keys: sha256 over the canonical JSON of named components.

Everything that can change a step's result is a component; what cannot (run id, timeouts, retries,
concurrency, API keys, api_base, clients) is left out, so keys are stable across runs and machines.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.machinery
import inspect
import json
import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = (
    "KEY_FORMAT_VERSION",
    "EXCLUDED_SETTINGS",
    "SourceDigest",
    "canonical_json",
    "code_digest",
    "hash_components",
    "module_digest",
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
_RACY_NS = 2_000_000_000  # a file changed this recently is read again at each use (its mtime may not move)


@dataclass(frozen=True)
class SourceDigest:
    """The digest of a module's code closure, and what it was taken over: ``files`` maps each source file
    (its absolute path) to the sha256 of its bytes, so a changed key can name the file that changed."""

    digest: str
    files: Mapping[str, str]


@dataclass(frozen=True)
class _Read:
    mtime_ns: int
    size: int
    sha256: str
    imports: frozenset[str]  # absolute module names the file's code imports (anywhere in it)


# path -> what was read of it. Checked against the file's mtime and size at every use, so a process that
# lives on (the warm starter, whose children inherit this; a notebook) sees an edit; never a stale digest.
_FILES: dict[tuple[str, str], _Read] = {}


def _imported(module: str, source: bytes, is_package: bool) -> frozenset[str]:
    """The modules ``module``'s code imports (anywhere in it, functions included), by name: for ``from a.b
    import c`` the module ``a.b``, and ``a.b.c`` (which may be a module too). Relative imports resolved."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, one level up per extra dot
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(name for name in found if name)


def _read(module: str, path: Path) -> _Read | None:
    """``path``'s digest and imports, read again only when its mtime or size moved (or it is racy: changed
    within the last 2 s, when an edit may leave both as they were); None when it cannot be read."""
    try:
        stat = path.stat()
        cached = _FILES.get((module, str(path)))
        if cached is not None and (cached.mtime_ns, cached.size) == (stat.st_mtime_ns, stat.st_size):
            return cached
        source = _read_bytes(path)
    except OSError:
        return None
    read = _Read(stat.st_mtime_ns, stat.st_size, hashlib.sha256(source).hexdigest(),
                 _imported(module, source, path.name == "__init__.py"))
    if time.time_ns() - stat.st_mtime_ns > _RACY_NS:
        _FILES[(module, str(path))] = read
    return read


def _read_bytes(path: Path) -> bytes:
    """The file's bytes (one place, so tests can stand an edit in for one)."""
    return path.read_bytes()


def _package_file(module: str) -> Path | None:
    """The source file of an ``evalduck.scorers`` module (``evalduck.scorers.prebuilt._judged`` ->
    ``prebuilt/_judged.py``), found without importing anything; None when there is none (or it is the
    ``testing`` helpers, which no scorer's result depends on)."""
    if not module.startswith(_PACKAGE + ".") or module.startswith(_PACKAGE + ".testing"):
        return None
    parts = module.split(".")[_PACKAGE.count(".") + 1:]
    for path in (_ROOT.joinpath(*parts).with_suffix(".py"), _ROOT.joinpath(*parts, "__init__.py")):
        if path.is_file():
            return path
    return None


def _not_the_users(path: Path) -> bool:
    """A file of the interpreter's, of an installed package or of evalduck: not the user's own code."""
    text = str(path)
    if "site-packages" in text or "dist-packages" in text or path.is_relative_to(_ROOT):
        return True
    return any(path.is_relative_to(Path(p).resolve()) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})


def _user_file(module: str) -> Path | None:
    """The source file of a module of the user's own (not the standard library, an installed package or
    evalduck), found without importing it: the loaded module's file, else where an import would find it."""
    top = module.partition(".")[0]
    if top in ("", "evalduck") or top in sys.stdlib_module_names:
        return None
    file = getattr(sys.modules.get(module), "__file__", None)
    if file is None and module != "__main__":
        spec = _find_spec(module)
        file = spec.origin if spec is not None and spec.has_location else None
    if not file or not str(file).endswith(".py"):
        return None
    path = Path(file).resolve()
    return None if _not_the_users(path) or not path.is_file() else path


def _find_spec(module: str) -> importlib.machinery.ModuleSpec | None:
    """Where ``import module`` would find it on ``sys.path``, running no code (no parent package is imported:
    its folder is searched)."""
    parts = module.split(".")
    spec = None
    try:
        for depth in range(1, len(parts) + 1):
            where = None if spec is None else spec.submodule_search_locations
            if spec is not None and where is None:
                return None
            spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth]), where)
            if spec is None:
                return None
    except (ImportError, ValueError, OSError):
        return None
    return spec


def module_digest(module: str) -> SourceDigest | None:
    """The one digest of code for cache keys: sha256 over the whole source of ``module`` and of the modules
    its code imports, transitively, of its own kind. For an ``evalduck.scorers`` module (a prebuilt scorer)
    those are the package's modules it uses (the scorer's module, its helpers, the core it builds on), and
    None when one has no source file (the version alone keys it then); for any other module, the user's own
    modules (not the standard library, installed packages or evalduck), and None when ``module`` is not one.

    A changed constant beside an unchanged function changes it, as does a comment; files are found by
    reading the source, not by running it. Each file is read once per process and read again when its
    mtime or size moved, so a long-lived process (the warm starter, a notebook) never serves a stale one."""
    ours = module == _PACKAGE or module.startswith(_PACKAGE + ".")
    locate = _package_file if ours else _user_file
    root = locate(module)
    if root is None:
        return None
    seen: dict[str, tuple[str, _Read]] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = root if name == module else locate(name)
        read = _read(name, path) if path is not None else None
        if read is None:
            if path is not None and ours:
                return None
            continue
        seen[name] = (str(path), read)
        todo.extend(read.imports - seen.keys())
    digest = hashlib.sha256()
    for name in sorted(seen):
        digest.update(f"{name}\0{seen[name][1].size}\0{seen[name][1].sha256}\0".encode())
    return SourceDigest(digest.hexdigest(), {path: read.sha256 for path, read in seen.values()})


def source_digest(module: str) -> str | None:
    """``module_digest(module)``'s hex digest (how prebuilt scorers key their steps); None without one."""
    found = module_digest(module)
    return found.digest if found is not None else None


def _defining_module(fn: Any) -> str:
    """The module whose code ``fn`` runs: through ``functools.partial`` and bound methods; for a callable
    object, its class's."""
    while isinstance(fn, functools.partial) or inspect.ismethod(fn):
        fn = fn.func if isinstance(fn, functools.partial) else fn.__func__
    owner = fn if inspect.isfunction(fn) or inspect.isclass(fn) else type(fn)
    module = getattr(owner, "__module__", None)
    return module if isinstance(module, str) else ""


def code_digest(fn: Callable[..., Any]) -> SourceDigest | None:
    """What keys a custom step or a target function: ``module_digest`` of the module that defines it, else
    (a notebook cell, ``python -c``: no file of the user's) the digest of the function's own source, else
    None."""
    module = _defining_module(fn)
    found = module_digest(module) if module else None
    if found is not None:
        return found
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    return SourceDigest(hashlib.sha256(source.encode("utf-8")).hexdigest(), {})
