"""Secrets kept out of what a judge error says and what is logged or stored: the values of secret-looking
keyword names, every API key this process knows (settings, environment), anything shaped like one, and
credentials written into URLs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalduck.scorers._judge import JudgeSettings

__all__ = ("public_extra", "redact", "redact_url")

_SECRET_NAME = re.compile(r"(key|token|secret|password)", re.IGNORECASE)
_KEY_LIKE = re.compile(r"\b(sk|pk|rk|key)-[A-Za-z0-9_\-]{6,}")
# scheme://userinfo@ (up to the last @ before the path, as URL parsers read it)
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/\s]+)@")


def public_extra(extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` with the values of secret-looking names (key, token, secret, password) masked."""
    return {k: ("***" if _SECRET_NAME.search(k) else v) for k, v in extra.items()}


def _secrets(settings: JudgeSettings) -> list[str]:
    found = [str(v) for k, v in settings.extra.items() if _SECRET_NAME.search(k) and v]
    found += [v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8]
    return sorted(set(found), key=len, reverse=True)


def redact(text: str, settings: JudgeSettings) -> str:
    """Remove every API key we know of (settings, environment), anything shaped like one, and credentials
    written into URLs."""
    for secret in _secrets(settings):
        text = text.replace(secret, "***")
    return redact_url(_KEY_LIKE.sub(lambda m: f"{m.group(1)}-***", text))


def redact_url(text: str) -> str:
    """``text`` with the userinfo of every URL in it masked: ``http://u:KEY@h/v1`` -> ``http://u:***@h/v1``
    (a bare ``https://TOKEN@host`` is masked whole). Error messages and, in flows, stored run settings."""
    return _USERINFO.sub(_mask_userinfo, text) if "@" in text else text


def _mask_userinfo(match: re.Match[str]) -> str:
    user, colon, _secret = match.group("userinfo").partition(":")
    return f"{match.group('scheme')}{user + ':' if colon else ''}***@"

