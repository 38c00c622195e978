"""What the warm starter and its clients share: where the socket is and whose it is, how a message travels, and
the starter's record of itself (what of the caller a child must match or take on: flows/local/warm/caller.py).

Standard library only: the thin client imports this before deciding whether to import anything else.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = (
    "MARKER",
    "MAX_MESSAGE",
    "DEFAULT_PRELOAD_S",
    "STATUS_FILE",
    "SUPPORTED",
    "UNSUPPORTED_WHY",
    "NotOurs",
    "close_fds",
    "connect_own",
    "folder_refusal",
    "own_folder",
    "peer",
    "recorded_pid",
    "recorded_socket",
    "recv",
    "send",
    "socket_path",
    "starter_refusal",
    "starter_status",
    "user_folder",
    "write_starter_status",
)

# In the starter's command line (`python -m` it): how a recorded pid is recognised as ours. Here, not in
# starter.py, so that what starts and stops the starter (flows/local/install/) needs no import of its loop.
MARKER = "evalduck.flows.local.warm.starter"

# The warm path needs Linux: SO_PEERCRED (who listens on a socket), pidfds, PR_SET_PDEATHSIG. Elsewhere every
# run goes in its own process.
# Every Linux-only call of the warm path (starter, client, child, renderer) is behind this one flag.
_LINUX_CALLS = ((socket, "SO_PEERCRED"), (os, "pidfd_open"), (os, "memfd_create"), (os, "sched_getaffinity"))
SUPPORTED = sys.platform == "linux" and all(hasattr(module, name) for module, name in _LINUX_CALLS)
# What -v says when a run goes in its own process for that reason.
_MISSING = [f"{module.__name__}.{name}" for module, name in _LINUX_CALLS if not hasattr(module, name)]
UNSUPPORTED_WHY = (f"the warm starter needs {', '.join(_MISSING)}, which this Python lacks" if sys.platform == "linux"
                   else f"the warm starter needs Linux (SO_PEERCRED, pidfds, prctl); this is {sys.platform}")

# One message is one SOCK_SEQPACKET datagram (argv, cwd, the environment): far below the socket's buffer.
MAX_MESSAGE = 1 << 20
_SUN_PATH_MAX = 100  # sockaddr_un's path is 108 bytes on Linux; keep a margin


# The starter's own account of itself, in the state folder: its pid, its phase ("waiting" for the run that
# started it, "importing" its preloads since ``since``, "listening"; "not serving" and the ``reason``, when it
# exited at its start), how long its preloads took
# (``preload_s``, kept for the next starter of the folder as its ``expected_s``) and its chart renderer's pid.
STATUS_FILE = "warm.json"
# What the preloads are expected to take when no starter of this folder has done them before (docs/benchmarks-history.md,
# 'Runs forked from a warm starter (2026-12-01)').
DEFAULT_PRELOAD_S = 10.0


class NotOurs(OSError):
    """A socket, or the folder it is in, belongs to another user: nothing is sent there or bound in it."""


def socket_path(state_dir: Path, name: str = "warm") -> Path:
    """``<state dir>/<name>.sock`` (the starter's, or ``render`` for its chart renderer), or, when that path
    is too long for a socket, one in a folder of this user's: ``$XDG_RUNTIME_DIR/evalduck`` when that is
    set and this user's, else ``<temp dir>/evalduck-<uid>`` (``own_folder`` checks it before a bind)."""
    path = state_dir / f"{name}.sock"
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        return path
    digest = hashlib.sha256(os.fsencode(state_dir)).hexdigest()[:16]
    path = user_folder() / f"{digest}-{name}.sock"
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        return path
    return _temp_user_folder() / f"{digest}-{name}.sock"


def user_folder() -> Path:
    """This user's folder for evalduck's runtime files: ``$XDG_RUNTIME_DIR/evalduck`` when that is set and
    this user's, else ``<temp dir>/evalduck-<uid>`` (``own_folder`` checks it before use)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and _owned_private(runtime):
        return Path(runtime) / "evalduck"
    return _temp_user_folder()


def _temp_user_folder() -> Path:
    return Path(tempfile.gettempdir()) / f"evalduck-{os.getuid()}"


def _owned_private(path: str | Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077 == 0


def own_folder(folder: Path) -> None:
    """Make ``folder`` (mode 0700) if it is missing; NotOurs unless it is a real folder (no symlink) of
    this user's that nobody else may enter: another user who made it first could swap the sockets in it."""
    try:
        os.mkdir(folder, 0o700)
        os.chmod(folder, 0o700)  # ours, just made: 0700 whatever the umask took from it
    except FileExistsError:
        pass
    why = folder_refusal(folder)
    if why is not None:
        raise NotOurs(why)


def folder_refusal(folder: Path) -> str | None:
    """Why ``folder`` must not hold a starter's socket (another user's, open to others, not a real folder),
    or None: it is this user's alone, or missing (the starter makes it). Read only, for a run before it
    connects or starts a starter."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{folder} cannot be read ({exc.strerror}): nothing of evalduck's is made or used there"
    if not stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a folder (a symlink?): nothing of evalduck's is made or used there; remove it"
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) != 0o700:
        return (f"{folder} belongs to uid {info.st_uid} with mode {stat.S_IMODE(info.st_mode):o}, not to this user "
                f"(uid {os.getuid()}) with mode 700: nothing of evalduck's is made or used there; remove it")
    return None


def starter_refusal(state_dir: Path) -> str | None:
    """Why this folder's runs cannot have a warm starter here (not Linux; its sockets' folder is not only
    this user's), or None."""
    if not SUPPORTED:
        return UNSUPPORTED_WHY
    folder = socket_path(state_dir).parent
    return None if folder == state_dir else folder_refusal(folder)


def peer(sock: socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end of a connected unix socket (the kernel's record)."""
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return pid, uid


def connect_own(sock: socket.socket, path: str) -> None:
    """Connect ``sock`` to ``path``; NotOurs (before anything is sent) when another user listens there."""
    sock.connect(path)
    _pid, uid = peer(sock)
    if uid != os.getuid():
        raise NotOurs(f"{path} is served by uid {uid}, not by this user (uid {os.getuid()})")


def recorded_socket(state_dir: Path) -> str | None:
    """The starter socket this folder's state file names (json only: a thin client does not import pydantic)."""
    try:
        value = json.loads((state_dir / "serve.json").read_text()).get("starter_socket")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def recorded_pid(state_dir: Path) -> int | None:
    """The starter pid this folder's state file names."""
    try:
        value = json.loads((state_dir / "serve.json").read_text()).get("starter_pid")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def starter_status(state_dir: Path) -> dict[str, Any] | None:
    """The starter's status file (``STATUS_FILE``), or None."""
    try:
        status = json.loads((state_dir / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) else None


def write_starter_status(state_dir: Path, **fields: Any) -> None:
    """Written whole (renamed over the old one): a reader never sees half of it."""
    path = state_dir / STATUS_FILE
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        scratch.write_text(json.dumps({"pid": os.getpid(), **fields}) + "\n")
        os.replace(scratch, path)
    except OSError:
        pass


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """One message as one datagram, with ``fds`` passed alongside (SCM_RIGHTS)."""
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
