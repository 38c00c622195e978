r"""JavaScript's text rules where a Mastra scorer's result depends on them (SCORERS.md 0.5).

``\s`` in JavaScript is U+0009-U+000D, U+0020, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
U+205F, U+3000 and U+FEFF; Python's ``\s`` adds U+001C-U+001F and U+0085 and lacks U+FEFF, so it is
spelled out here. JavaScript's ``trim()`` strips the same set.
"""

from __future__ import annotations

import re

__all__ = ("JS_WHITESPACE", "collapse_whitespace", "delete_whitespace", "split_on_whitespace", "trim")

JS_WHITESPACE = "\t\n\x0b\x0c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"

_ONE = re.compile(f"[{re.escape(JS_WHITESPACE)}]")
_RUN = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")


def trim(text: str) -> str:
    """``text.trim()``."""
    return text.strip(JS_WHITESPACE)


def collapse_whitespace(text: str) -> str:
    r"""``text.replace(/\s+/g, ' ').trim()``."""
    return trim(_RUN.sub(" ", text))


def delete_whitespace(text: str) -> str:
    r"""``text.replace(/\s+/g, '')``."""
    return _RUN.sub("", text)


def split_on_whitespace(text: str) -> list[str]:
    r"""``text.split(/\s/)``: one piece between every two whitespace characters (empty ones included)."""
    return _ONE.split(text)
