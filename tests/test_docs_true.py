"""Docs that stay true: what docstrings, comments and Markdown links point at must exist.

Three checks over the repository as it is, no process started (part of `make test-fast`):
- a docstring or comment in flows/ or scorers/ that names a repository file (flows/..., scorers/..., docs/...,
  tests/..., bench/... with an extension or a trailing slash) names one that exists;
- one that cites a section of docs/benchmarks.md or docs/benchmarks-history.md by its title
  ("docs/benchmarks-history.md, 'Runs forked from a warm starter'") cites a heading of that file (for
  docs/benchmarks.md, of it or of the history its table links into);
- a link in README.md or docs/*.md to a local file resolves, and so does its `#anchor` when it points into
  a Markdown file (GitHub's heading anchors); a repository path their text names exists (but in
  docs/benchmarks-history.md, a record of what was measured then).
Each checker is tried on a made-up text first, so a checker that finds nothing cannot pass unnoticed.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE_ROOTS = ("flows", "scorers")
# The dated measurements: the files a section names were there when it was measured, and may go since.
HISTORY = ROOT / "docs" / "benchmarks-history.md"

_PATH = re.compile(r"(?<![\w./-])((?:flows|scorers|docs|tests|bench)/[\w*./-]*)")
_SECTION = re.compile(
    r"(docs/benchmarks(?:-history)?\.md),?\s+(?:section\s+)?(?:'((?:[^']|'(?=\w))+)'|\"([^\"]+)\")"
)
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\s*\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
_FENCE = re.compile(r"^\s*(```|~~~)")


def texts_of(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every docstring and every comment block of a module's source, whitespace normalised
    (a comment block is consecutive comment lines, so a path or a title may run over a line break)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = node.body[0] if node.body else None
            if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str):
                yield doc.lineno, " ".join(doc.value.value.split())
    block: list[str] = []
    start = last = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        line = tok.start[0]
        if block and line != last + 1:
            yield start, " ".join(block)
            block = []
        if not block:
            start = line
        block.append(tok.string.lstrip("#").strip())
        last = line
    if block:
        yield start, " ".join(block)


def named_paths(text: str) -> Iterator[str]:
    """Repository paths a text names: a root folder, then a file with an extension or a folder with a slash."""
    for match in _PATH.finditer(text):
        path = match.group(1).rstrip(".,;:")
        if path.endswith("/") or "." in path.rsplit("/", 1)[-1]:
            yield path


def exists(path: str) -> bool:
    """Whether `path` (relative to the repository; `*` as a glob) names something that exists."""
    return any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()


def headings(markdown: str) -> list[str]:
    """The headings of a Markdown text, outside fenced code, without their `#`s."""
    found, fenced = [], False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            found.append(line.lstrip("#").strip())
    return found


def anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a Markdown text's headings: lower case, punctuation but `-` and `_` dropped,
    spaces as `-`, a repeated one suffixed `-1`, `-2`..."""
    seen: dict[str, int] = {}
    for heading in headings(markdown):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def cited_sections(text: str) -> Iterator[tuple[str, str]]:
    """(file, title) of each "docs/benchmarks....md, 'Title'" a text cites."""
    for match in _SECTION.finditer(text):
        yield match.group(1), match.group(2) or match.group(3)


def has_section(markdown: str, title: str) -> bool:
    """Whether a heading starts with `title` (backticks and case ignored: a citation may shorten a title)."""
    wanted = title.replace("`", "").casefold().strip()
    return any(h.replace("`", "").casefold().startswith(wanted) for h in headings(markdown))


def cited_pages(doc: str) -> list[Path]:
    """Where a cited title may stand: the page named, and for docs/benchmarks.md (whose table links every
    dated section) also docs/benchmarks-history.md, where those sections are."""
    pages = [ROOT / doc, *([HISTORY] if doc == "docs/benchmarks.md" else [])]
    return [page for page in pages if page.exists()]


def links(markdown: str) -> Iterator[tuple[int, str]]:
    """(line, target) of every inline or reference link outside fenced and inline code."""
    fenced = False
    for number, line in enumerate(markdown.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        for match in _LINK.finditer(line):
            yield number, match.group(1) or match.group(2)


def broken_link(page: Path, target: str) -> str | None:
    """Why a link from `page` does not resolve, or None (web and mail links are not checked)."""
    if re.match(r"[a-z][a-z0-9+.-]*:", target):
        return None
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    if not file.exists():
        return f"no file {path}"
    if anchor and file.suffix == ".md" and anchor not in anchors(file.read_text(encoding="utf-8")):
        return f"no heading with anchor #{anchor} in {file.relative_to(ROOT)}"
    return None


def code_findings() -> list[tuple[str, str]]:
    """(file:line, what is wrong) for the docstrings and comments of flows/ and scorers/."""
    found = []
    for root in CODE_ROOTS:
        for module in sorted((ROOT / root).rglob("*.py")):
            name = module.relative_to(ROOT).as_posix()
            for line, text in texts_of(module.read_text(encoding="utf-8")):
                found += [(f"{name}:{line}", f"names {p}, which does not exist") for p in named_paths(text)
                          if not exists(p)]
                for doc, title in cited_sections(text):
                    if not any(has_section(page.read_text(encoding="utf-8"), title) for page in cited_pages(doc)):
                        found.append((f"{name}:{line}", f"cites section '{title}', which {doc} does not have"))
    return found


def link_findings() -> list[tuple[str, str]]:
    """(file:line, what is wrong) for the links of README.md and docs/*.md, and the repository paths their
    text names (but the history's)."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        name = page.relative_to(ROOT).as_posix()
        text = page.read_text(encoding="utf-8")
        for line, target in links(text):
            why = broken_link(page, target)
            if why:
                found.append((f"{name}:{line}", f"link {target}: {why}"))
        if page != HISTORY:
            found += [(f"{name}:{number}", f"names {path}, which does not exist")
                      for number, line in enumerate(text.splitlines(), 1)
                      for path in named_paths(line) if not exists(path)]
    return found


def test_the_checkers_find_what_they_look_for() -> None:
    source = (
        '"""Uses flows/no_such_module.py and docs/ (docs/benchmarks.md, section \'Some run\'s title\')."""\n'
        "# see scorers/_step.py and bench/\n# and tests/nowhere/\nx = 1  # flows/engine is a package\n"
    )
    texts = dict(texts_of(source))
    assert [p for t in texts.values() for p in named_paths(t)] == [
        "flows/no_such_module.py", "docs/", "docs/benchmarks.md", "scorers/_step.py", "bench/", "tests/nowhere/",
    ]
    assert [p for t in texts.values() for p in named_paths(t) if not exists(p)] == [
        "flows/no_such_module.py", "tests/nowhere/",
    ]
    assert list(cited_sections(texts[1])) == [("docs/benchmarks.md", "Some run's title")]
    page = "# Bench\n\n## A run's `exit` (A/B, 2026-12-02)\n\n```\n## not a heading\n```\n## Bench\n"
    assert anchors(page) == {"bench", "a-runs-exit-ab-2026-12-02", "bench-1"}
    assert has_section(page, "A run's exit") and not has_section(page, "not a heading")
    text = "[a](docs/x.md#y) `[b](no.md)` ![img](pic.png)\n```\n[c](in-fence.md)\n```\n[ref]: bench/\n"
    assert list(links(text)) == [(1, "docs/x.md#y"), (5, "bench/")]
    readme = ROOT / "README.md"
    assert broken_link(readme, "https://example.com/x") is None
    assert broken_link(readme, "docs/benchmarks.md") is None
    assert broken_link(readme, "docs/nope.md") == "no file docs/nope.md"
    assert broken_link(readme, "docs/benchmarks.md#benchmarks") is None
    assert "no heading" in (broken_link(readme, "docs/benchmarks.md#no-such-section") or "")


def test_docstrings_and_comments_name_only_what_exists() -> None:
    found = code_findings()
    assert not found, "\n".join(f"{where}: {what}" for where, what in found)


def test_markdown_links_and_paths_resolve() -> None:
    found = link_findings()
    assert not found, "\n".join(f"{where}: {what}" for where, what in found)
