"""docs/scorers.md's catalogue table, generated from ``PREBUILT`` so the page cannot drift from the code.

``python -m evalduck.scorers.prebuilt._table docs/scorers.md`` rewrites the table between the page's markers;
``--check`` exits 1 when the page's table differs (tests/scorers/test_docs.py runs it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from evalduck.scorers.prebuilt._catalog import PREBUILT
from evalduck.scorers.prebuilt._declare import PrebuiltScorer

__all__ = ("BEGIN", "END", "catalogue_table", "main", "with_table")

BEGIN = "<!-- catalogue: generated from evalduck.scorers.PREBUILT by `python -m evalduck.scorers.prebuilt._table docs/scorers.md` -->"
END = "<!-- end of catalogue -->"


def catalogue_table(entries: Iterable[PrebuiltScorer] | None = None) -> str:
    """One row a prebuilt scorer, in PREBUILT's order: id, factory, kind, direction, version, fields read."""
    rows = ["| id | factory | kind | better | version | reads |", "| --- | --- | --- | --- | --- | --- |"]
    for p in PREBUILT.values() if entries is None else entries:
        rows.append(
            f"| `{p.id}` | `{p.factory.__name__}` | {'judge' if p.needs_judge else 'code'} | "
            f"{'higher' if p.higher_is_better else '**lower**'} | {p.version} | {', '.join(p.reads) or '?'} |"
        )
    return "\n".join(rows)


def with_table(page: str, table: str) -> str:
    """``page`` with the text between its markers replaced by ``table``."""
    head, begin, rest = page.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"the page has no table markers: put {BEGIN!r} and {END!r} on lines of their own")
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evalduck.scorers.prebuilt._table", description=__doc__)
    parser.add_argument("page", type=Path, help="the Markdown page with the table markers (docs/scorers.md)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the page's table differs; change nothing")
    args = parser.parse_args(argv)
    page = args.page.read_text(encoding="utf-8")
    try:
        updated = with_table(page, catalogue_table())
    except ValueError as exc:
        print(f"{args.page}: {exc}", file=sys.stderr)
        return 2
    if updated == page:
        return 0
    if args.check:
        print(f"{args.page}: the catalogue table differs from evalduck.scorers.PREBUILT; regenerate it with "
              f"`python -m evalduck.scorers.prebuilt._table {args.page}`", file=sys.stderr)
        return 1
    args.page.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
