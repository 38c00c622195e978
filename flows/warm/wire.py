"""What the warm starter and its clients share: where the socket is, how a message travels, and which parts of
a caller must match the starter for a forked child to behave as a fresh process would.

Standard library only: the thin client imports this before deciding whether to import anything else.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = (
    "MAX_MESSAGE",
    "PACKAGES_ROOT",
    "close_fds",
    "frozen_env",
    "identity",
    "recorded_socket",
    "recv",
    "send",
    "socket_path",
)

# One message is one SOCK_SEQPACKET datagram (argv, cwd, the environment): far below the socket's buffer.
MAX_MESSAGE = 1 << 20
# The folder holding the `flows` and `scorers` packages (an editable install's source tree).
PACKAGES_ROOT = str(Path(__file__).resolve().parents[2])
_SUN_PATH_MAX = 100  # sockaddr_un's path is 108 bytes on Linux; keep a margin
# Variables read once at interpreter start or by the preloaded imports and not re-read by a child: a caller
# whose values differ runs in its own process.
_FROZEN_ENV = (
    "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONHASHSEED", "PYTHONNOUSERSITE", "PYTHONUSERBASE",
    "PYTHONPLATLIBDIR", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONWARNINGS", "PYTHONDEVMODE",
    "LITELLM_LOCAL_MODEL_COST_MAP",
)
# What evalduck sets when unset, before any import (flows/settings.py, flows/server.py).
_DEFAULTED = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def socket_path(state_dir: Path, name: str = "warm") -> Path:
    """``<state dir>/<name>.sock`` (the starter's, or ``render`` for its chart renderer), or a per-user
    temporary folder when that path is too long for a socket."""
    path = state_dir / f"{name}.sock"
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        return path
    digest = hashlib.sha256(os.fsencode(state_dir)).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"evalduck-{os.getuid()}" / f"{digest}-{name}.sock"


def recorded_socket(state_dir: Path) -> str | None:
    """The starter socket this folder's state file names (json only: pydantic's import costs 0.3 s)."""
    try:
        value = json.loads((state_dir / "serve.json").read_text()).get("starter_socket")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def identity() -> dict[str, str]:
    """The interpreter and source tree of this process: a starter serves only callers with the same ones."""
    return {"executable": sys.executable, "root": PACKAGES_ROOT}


def frozen_env(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` a forked child cannot apply (their effect is fixed at start or import)."""
    values = {**_DEFAULTED, **env}
    return {name: values[name] for name in _FROZEN_ENV if name in values}


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.sendall(data)


def recv(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """One message and the file descriptors sent with it; ``(None, [])`` when the peer is gone."""
    try:
        data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 8)
    except (ConnectionResetError, BrokenPipeError):
        return None, []
    if not data:
        close_fds(fds)
        return None, []
    try:
        message = json.loads(data)
    except ValueError:
        close_fds(fds)
        return None, []
    return (message if isinstance(message, dict) else None), fds


def close_fds(fds: list[int]) -> None:
    """Close and forget them (emptied, so a second call closes nothing that was reused since)."""
    while fds:
        try:
            os.close(fds.pop())
        except OSError:
            pass
