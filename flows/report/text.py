"""User strings as the terminal and the Prefect UI show them: literally, with invisible characters made visible.

A run name, item id, reason or error text is data, never markup: `[/]` in a name must not crash a rich
table, `gpt-4o [baseline]` must not lose its tag, `:smile:` must not turn into an emoji, an ANSI escape in
an id must not restyle the user's terminal, and `|` or `<b>` in a name must not break a markdown artifact.
`literal` is the one way the CLI and the progress bar hand user text to rich (a `Text`, which rich never
parses); `md_text`/`md_code` are the one way artifacts put it into markdown. No prefect import here.
"""

from __future__ import annotations

import re
import shlex

from rich.text import Text

__all__ = ("visible", "visible_rule", "literal", "shell_word", "md_text", "md_code")

# C0 controls, DEL, C1 controls (ESC and CSI start terminal escape sequences), and the bidirectional
# overrides and isolates that reorder what a terminal or browser shows ("Trojan source").
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
MULTILINE = "\n\t"  # what a cell that holds free text (a reason, an error, an input) keeps as is


def _shown(char: str) -> str:
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(value: object, keep: str = "") -> str:
    r"""``str(value)`` with each control character written as its Python escape (ESC as ``\x1b``, a
    newline as ``\n``), except those in ``keep``."""
    text = str(value)
    return _INVISIBLE.sub(lambda m: m.group() if m.group() in keep else _shown(m.group()), text)


def visible_rule() -> dict[str, object]:
    """`visible`'s rule as data, for the HTML report's script to apply the same one to what it draws: the
    pattern of the characters shown escaped, the named escapes and what a multi-line text keeps."""
    return {"pattern": _INVISIBLE.pattern, "named": dict(_NAMED), "multiline": MULTILINE}


def literal(*parts: object | tuple[object, str], style: str = "", multiline: bool = False) -> Text:
    r"""One rich `Text` of ``parts``, each shown literally: a value, or ``(value, style)``. Newlines and tabs
    are kept when ``multiline``, else shown as ``\n``/``\t`` (names and ids stay on one line)."""
    keep = MULTILINE if multiline else ""
    text = Text(style=style)
    for part in parts:
        if isinstance(part, Text):
            text.append_text(part)
        elif isinstance(part, tuple):
            text.append(visible(part[0], keep), style=part[1])
        else:
            text.append(visible(part, keep))
    return text


def shell_word(value: str) -> str | None:
    """``value`` quoted for a shell command line to paste, or None when it holds characters a plain
    quote cannot carry visibly (then name the thing another way, e.g. by its id)."""
    return shlex.quote(value) if visible(value) == value else None


# Markdown's punctuation that can start markup, and HTML's: each written with a backslash (CommonMark
# escapes any ASCII punctuation), so a name shows as typed in the UI and a `|` stays inside its table cell.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~&])")


def md_text(value: object) -> str:
    """``value`` as literal markdown text on one line (a heading, a sentence or a table cell)."""
    return _MD_SPECIAL.sub(r"\\\1", visible(value))


def md_code(value: object) -> str:
    """``value`` as a markdown code span on one line, fenced by more backticks than it holds. In a table
    cell use `md_text`: a `|` ends a GFM cell even inside a code span."""
    text = visible(value)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
