"""The layers of ``evalduck.flows`` and the import circles among its modules, read from the source with ``ast``.

``LAYERS`` is the one place the order is written (docs/architecture.md shows it): rooms from low to high, each
with the modules in it. A module may import its own room and the rooms below; an import of a higher room fails
here unless ``ALLOWED_UPWARD`` names it. Circles: none at module level (an import executed at import time), and
the function-level ones (imports inside a function, run when it is called) only those ``ALLOWED_CYCLES`` names.
Both lists are today's debt: an entry that no longer occurs fails too, so they only shrink. Imports under
``if TYPE_CHECKING:`` never run and are not counted; neither is a package's ``__init__`` importing its own
submodules or they it (the registration idiom of cli/ and server/).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

FLOWS = Path(__file__).resolve().parents[2] / "flows"
PACKAGE = "evalduck.flows"

# Low to high. A member is a module or package path under evalduck.flows ("" is the package's __init__); a module
# belongs to the room of its longest matching member.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("settings", "prefect_settings", "config", "run_form")),  # options and environment; no Prefect
    ("project", ("project",)),  # the project folder and its file
    ("store", ("store",)),  # the DuckDB results
    ("inputs", ("inputs",)),  # what a run is given, loaded and checked
    ("engine", ("engine",)),  # execute(plan): steps, batches, dispatch, the Prefect tasks
    ("judge", ("judge",)),  # judge requests in a child process
    ("report", ("report",)),  # what a run shows
    ("run", ("run",)),  # prepare -> execute -> finish, around one run
    ("local", ("local",)),  # processes evalduck starts on this machine
    ("flow", ("eval_flow", "regression_flow", "sweep_flow", "warm")),  # the Prefect flows (prefect.yaml names them), old commands
    ("cli", ("cli",)),  # the `evalduck` commands
    ("face", ("", "launch")),  # the package's public names and the `evalduck` script
)

# (importer, imported), module names under evalduck.flows: upward imports still to be cut.
ALLOWED_UPWARD: frozenset[tuple[str, str]] = frozenset({
    # The one deliberate upward call: the warm starter's child runs what it launches (a CLI command or a flow).
    ("local.warm.child", "cli"),
    ("local.warm.child", "cli.run_stops"),
})

# Function-level circles still to be cut, each as its set of modules.
ALLOWED_CYCLES: frozenset[frozenset[str]] = frozenset()

Graph = Mapping[str, Iterable[tuple[str, str]]]  # module -> (imported module, "module" | "function")


def _name(path: Path, root: Path) -> str:
    parts = list(path.with_suffix("").relative_to(root).parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING"


def _imports(tree: ast.Module, package: str) -> list[tuple[str, str, str]]:
    """(dotted module, imported name or "", kind) of every import in ``tree``; a relative one resolved against
    ``package``."""
    found: list[tuple[str, str, str]] = []

    def visit(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            inner = "function" if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else kind
            if isinstance(child, ast.Import):
                found.extend((alias.name, "", kind) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*up, base] if base else up)
                found.extend((base, alias.name, kind) for alias in child.names)
            visit(child, inner)

    visit(tree, "module")
    return found


def import_graph(root: Path = FLOWS) -> dict[str, set[tuple[str, str]]]:
    """Every module of ``root`` (names relative to evalduck.flows) and the modules of it that it imports."""
    paths = {_name(p, root): p for p in root.rglob("*.py") if "__pycache__" not in p.parts}
    graph: dict[str, set[tuple[str, str]]] = {}
    for name, path in paths.items():
        full = f"{PACKAGE}.{name}".rstrip(".")
        package = full if path.name == "__init__.py" else full.rpartition(".")[0]
        edges: set[tuple[str, str]] = set()
        for dotted, imported, kind in _imports(ast.parse(path.read_text(encoding="utf-8")), package):
            if dotted != PACKAGE and not dotted.startswith(PACKAGE + "."):
                continue
            target = dotted[len(PACKAGE) + 1:]
            # ``from evalduck.flows.local.warm import child`` imports warm.child (warm's __init__ runs as its parent)
            submodule = f"{target}.{imported}".lstrip(".")
            target = submodule if imported and submodule in paths else target
            if target in paths and target != name:
                edges.add((target, kind))
        graph[name] = edges
    return graph


def room_of(module: str, layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) -> str | None:
    best: tuple[int, str] | None = None
    for room, members in layers:
        for member in members:
            if member == module or (member and module.startswith(member + ".")):
                if best is None or len(member) > best[0]:
                    best = (len(member), room)
    return None if best is None else best[1]


def upward_imports(graph: Graph, layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) -> set[tuple[str, str]]:
    """(importer, imported) where the imported module sits in a higher room than its importer."""
    rank = {room: i for i, (room, _) in enumerate(layers)}
    up: set[tuple[str, str]] = set()
    for module, edges in graph.items():
        for target, _kind in edges:
            here, there = room_of(module, layers), room_of(target, layers)
            if here is not None and there is not None and rank[there] > rank[here]:
                up.add((module, target))
    return up


def _own_package(a: str, b: str) -> bool:
    """A package's __init__ and a module inside it (either way round)."""
    return a == "" or b == "" or a.startswith(b + ".") or b.startswith(a + ".")


def cycles(graph: Graph, kinds: frozenset[str]) -> set[frozenset[str]]:
    """The import circles (strongly connected components of two or more modules) through edges of ``kinds``."""
    adjacent = {m: sorted({t for t, k in edges if k in kinds and t in graph and not _own_package(m, t)})
                for m, edges in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def connect(v: str) -> None:  # Tarjan's algorithm; flows/ is far below the recursion limit
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in adjacent[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for v in adjacent:
        if v not in index:
            connect(v)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[tuple[str, str]]]:
    return import_graph()


def test_every_module_has_a_room(graph: dict[str, set[tuple[str, str]]]) -> None:
    homeless = sorted(m for m in graph if room_of(m) is None)
    assert not homeless, f"add these modules to a room in LAYERS (tests/flows/test_layers.py): {homeless}"


def test_no_lower_room_imports_a_higher_one(graph: dict[str, set[tuple[str, str]]]) -> None:
    up = upward_imports(graph)
    new = sorted(up - ALLOWED_UPWARD)
    assert not new, f"a lower room imports a higher one (LAYERS in tests/flows/test_layers.py): {new}"
    gone = sorted(ALLOWED_UPWARD - up)
    assert not gone, f"no longer imported: remove from ALLOWED_UPWARD: {gone}"


def test_no_import_circle_at_module_level(graph: dict[str, set[tuple[str, str]]]) -> None:
    assert cycles(graph, frozenset({"module"})) == set()


def test_function_level_circles_only_the_allowed(graph: dict[str, set[tuple[str, str]]]) -> None:
    found = cycles(graph, frozenset({"module", "function"}))
    assert not found - ALLOWED_CYCLES, f"a new import circle: {sorted(map(sorted, found - ALLOWED_CYCLES))}"
    assert not ALLOWED_CYCLES - found, f"cut: remove from ALLOWED_CYCLES: {sorted(map(sorted, ALLOWED_CYCLES - found))}"


SYNTHETIC_LAYERS = (("low", ("a", "pkg")), ("high", ("b",)))


def test_a_new_upward_import_is_found() -> None:
    graph = {"a": {("pkg.x", "module")}, "pkg.x": {("b", "function")}, "b": {("a", "module")}, "pkg": set()}
    assert upward_imports(graph, SYNTHETIC_LAYERS) == {("pkg.x", "b")}
    assert upward_imports({"b": {("a", "module")}, "a": set()}, SYNTHETIC_LAYERS) == set()


def test_circles_are_found_by_kind() -> None:
    graph = {"a": {("pkg.x", "module")}, "pkg.x": {("b", "function")}, "b": {("a", "module")}, "pkg": {("pkg.x", "module")},
             "c": {("d", "module")}, "d": {("c", "module")}}
    assert cycles(graph, frozenset({"module"})) == {frozenset({"c", "d"})}
    assert cycles(graph, frozenset({"module", "function"})) == {frozenset({"c", "d"}), frozenset({"a", "pkg.x", "b"})}
    # A package and its own submodule importing each other is the registration idiom, not a circle.
    assert cycles({"pkg": {("pkg.x", "module")}, "pkg.x": {("pkg", "module")}}, frozenset({"module"})) == set()


def test_imports_are_read_with_their_kind(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "sub" / "__init__.py").write_text("")
    (tmp_path / "sub" / "y.py").write_text("")
    (tmp_path / "x.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from evalduck.flows.sub import y\n"
        "if TYPE_CHECKING:\n    from evalduck.flows import z\n"
        "def f():\n    from . import z\n"
    )
    (tmp_path / "z.py").write_text("import evalduck.flows.x\n")
    graph = import_graph(tmp_path)
    assert graph["x"] == {("sub.y", "module"), ("z", "function")}
    assert graph["z"] == {("x", "module")}


def test_the_architecture_page_shows_the_same_layers() -> None:
    """docs/architecture.md opens with the rooms from high to low: the same names, in the order of ``LAYERS``,
    each with its members."""
    page = (FLOWS.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    picture = page.split("## The layers of `evalduck.flows`", 1)[1].split("```", 2)[1]
    shown: dict[str, str] = {}
    for line in picture.splitlines():
        if line[:1].isalpha():
            room = line.split()[0]
            shown[room] = line
        elif line.strip() and shown:
            shown[room] += line
    assert list(shown) == [room for room, _ in reversed(LAYERS)]
    for room, members in LAYERS:
        missing = [m for m in members if m and f" {m}.py" not in shown[room] and f" {m}/" not in shown[room]]
        assert not missing, f"docs/architecture.md: room {room} does not show {missing}"
