"""Credentials written into URLs (`http://user:KEY@host/v1`) masked wherever a run's settings are kept or
shown: the results file's `runs.config` and Prefect's flow-run parameters. The run itself uses the real URL.

Only the userinfo part of a `scheme://` URL is masked; API keys given as such (environment, `extra`) are
never stored in the first place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ("MASK", "redact_url", "redact_urls")

MASK = "***"
# scheme://userinfo@ (up to the last @ before the path, as URL parsers read it): `user:password` keeps
# `user`, a bare token (`https://TOKEN@host`) is masked whole.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/\s]+)@")


def _mask(match: re.Match[str]) -> str:
    user, colon, _secret = match.group("userinfo").partition(":")
    return f"{match.group('scheme')}{user + ':' if colon else ''}{MASK}@"


def redact_url(text: str) -> str:
    """`text` with the userinfo of every URL in it masked: `http://u:KEY@h/v1` -> `http://u:***@h/v1`."""
    return _USERINFO.sub(_mask, text) if "@" in text else text


def redact_urls(value: Any) -> Any:
    """A copy of JSON-like `value` (dicts, lists, tuples, strings) with `redact_url` applied to every string."""
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, Mapping):
        return {key: redact_urls(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_urls(item) for item in value]
    return value
