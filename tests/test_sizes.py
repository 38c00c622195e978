"""Small modules and short functions, read from the source with ``ast``: a module of ``evalduck.flows``,
``evalduck.scorers`` or ``evalduck`` over ``MAX_MODULE_LINES`` lines, or a function over ``MAX_FUNCTION_LINES``,
fails here. A CLI command's option list is its signature, so a command's lines are counted from its body.
``scorers/testing/`` is the test fake of a provider's API, not the library."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flows", "scorers", "evalduck")
EXEMPT = ("scorers/testing/",)
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60
# Exceptions, each with its reason (none today); the test below fails on an entry no longer needed.
ALLOWED: frozenset[str] = frozenset()


def _sources() -> list[Path]:
    found = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts]
    return sorted(p for p in found if not p.relative_to(ROOT).as_posix().startswith(EXEMPT))


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's lines from its body's first statement (after the docstring: the why, never too long)."""
    body = node.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    return (node.end_lineno or node.lineno) - body[0].lineno + 1


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.relative_to(root)}:{node.lineno} {node.name} ({_body_lines(node)} lines)"
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and _body_lines(node) > limit]


def _big_modules() -> dict[str, int]:
    return {p.relative_to(ROOT).as_posix(): n for p in _sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}


def _long_functions() -> dict[str, str]:
    return {f"{line.split(':')[0]}:{line.split()[1]}": line for p in _sources() for line in long_functions(p)}


def test_no_module_is_over_the_limit() -> None:
    big = {name: n for name, n in _big_modules().items() if name not in ALLOWED}
    assert not big, f"split these by job (at most {MAX_MODULE_LINES} lines a module): {big}"


def test_no_function_is_over_the_limit() -> None:
    long = [line for name, line in _long_functions().items() if name not in ALLOWED]
    assert not long, f"at most {MAX_FUNCTION_LINES} lines of body a function; name the steps: {long}"


def test_the_allowed_list_only_shrinks() -> None:
    stale = ALLOWED - set(_big_modules()) - set(_long_functions())
    assert not stale, f"no longer too long: take them out of ALLOWED in tests/test_sizes.py: {sorted(stale)}"


def test_the_count_starts_after_the_signature_and_the_docstring(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    signature = "def f(\n" + "".join(f"    a{i}: int = {i},\n" for i in range(40)) + ") -> None:\n"
    (tmp_path / "ok.py").write_text(signature + '    """Why.\n\n    More why.\n    """\n' + body)
    (tmp_path / "long.py").write_text("async def g() -> None:\n" + body + "    return None\n")
    assert long_functions(tmp_path / "ok.py", root=tmp_path) == []
    assert long_functions(tmp_path / "long.py", root=tmp_path) == [f"long.py:1 g ({MAX_FUNCTION_LINES + 1} lines)"]
