"""What the warm starter and its clients share: where the socket is, how a message travels, and which parts of
a caller must match the starter for a forked child to behave as a fresh process would.

Standard library only: the thin client imports this before deciding whether to import anything else.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import stat
import struct
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = (
    "MARKER",
    "MAX_MESSAGE",
    "PACKAGES_ROOT",
    "DEFAULT_PRELOAD_S",
    "STATUS_FILE",
    "SUPPORTED",
    "UNSUPPORTED_WHY",
    "NotOurs",
    "apply_process",
    "caller_process",
    "close_fds",
    "connect_own",
    "folder_refusal",
    "frozen_env",
    "identity",
    "own_folder",
    "peer",
    "recorded_pid",
    "recorded_socket",
    "recv",
    "send",
    "socket_path",
    "starter_env",
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
# The folder holding the `flows` and `scorers` packages (an editable install's source tree).
PACKAGES_ROOT = str(Path(sys.modules["evalduck.flows"].__file__).resolve().parents[1])
_SUN_PATH_MAX = 100  # sockaddr_un's path is 108 bytes on Linux; keep a margin
# Variables read once at interpreter start or by the preloaded imports and not re-read by a child: a caller
# whose values differ runs in its own process.
_FROZEN_ENV = (
    "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONHASHSEED", "PYTHONNOUSERSITE", "PYTHONUSERBASE",
    "PYTHONPLATLIBDIR", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONWARNINGS", "PYTHONDEVMODE",
    "LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_LOG",  # litellm's log level is read at its import (litellm/_logging.py)
)
# What evalduck sets when unset, before any import (flows/settings.py, flows/local/install/state.py).
_DEFAULTED = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
# The starter's own environment (``starter_env``): what an interpreter needs to start and import, and what
# Prefect, litellm and evalduck read at import; never the starting run's keys (each run sends its own).
_STARTER_NAMES = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR",
                            "TEMP", "TMP", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "DO_NOT_TRACK", *_FROZEN_ENV})
_STARTER_PREFIXES = ("LC_", "XDG_", "PYTHON", "PREFECT_", "EVALDUCK_", "LITELLM_")
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "AUTH", "CREDENTIAL", "COOKIE")


# The starter's own account of itself, in the state folder: its pid, its phase ("waiting" for the run that
# started it, "importing" its preloads since ``since``, "listening"; "not serving" and the ``reason``, when it
# exited at its start), how long its preloads took
# (``preload_s``, kept for the next starter of the folder as its ``expected_s``) and its chart renderer's pid.
STATUS_FILE = "warm.json"
# What the preloads are expected to take when no starter of this folder has done them before (~5-10 s here).
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


def starter_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` scrubbed for a starter: the variables an interpreter and the preloads read at start
    (``_STARTER_NAMES``, ``_STARTER_PREFIXES``), none whose name says it holds a secret (provider API keys,
    PREFECT_API_AUTH_STRING, tokens): the starter lives for many runs, and each run sends its own."""
    return {name: value for name, value in env.items()
            if (name in _STARTER_NAMES or name.startswith(_STARTER_PREFIXES))
            and not any(word in name.upper() for word in _SECRET_WORDS)}


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
    """The starter socket this folder's state file names (json only: pydantic's import costs 0.3 s)."""
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


def identity() -> dict[str, str]:
    """The interpreter and source tree of this process: a starter serves only callers with the same ones."""
    return {"executable": sys.executable, "root": PACKAGES_ROOT}


# The parts of a process a forked child does not inherit from its caller but from the starter, taken along
# with each request and applied in the child (``apply_process``): the umask, the nice value, every resource
# limit (`ulimit`) and the CPUs it may run on (`taskset`); and the signals it ignores (`nohup`, `cmd &`),
# which the child's take-over applies (flows/local/warm/child.py).


def _rlimits() -> dict[str, int]:
    import resource  # not at import: this module is imported on every platform, `resource` is POSIX only

    return {name: getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")}


def caller_process() -> dict[str, Any]:
    """This process's umask, nice value, resource limits, CPU affinity and ignored signals (JSON-ready)."""
    import resource

    mask = os.umask(0o077)
    os.umask(mask)
    return {"umask": mask, "nice": os.getpriority(os.PRIO_PROCESS, 0),
            "rlimits": {name: list(resource.getrlimit(number)) for name, number in _rlimits().items()},
            "affinity": sorted(os.sched_getaffinity(0)), "ignored": ignored_signals()}


def ignored_signals() -> list[int]:
    """The signals this process ignores (SIG_IGN): a child forked for it ignores the same ones."""
    return sorted(int(sig) for sig in signal.valid_signals()
                  if sig not in (signal.SIGKILL, signal.SIGSTOP) and signal.getsignal(sig) is signal.SIG_IGN)


def apply_process(settings: dict[str, Any]) -> None:
    """Make this process's umask, nice value, limits and affinity the caller's ``settings``; OSError (or
    ValueError) when one cannot be applied here (a hard limit above this process's, a lower nice value
    than this process's without the privilege): the run then goes in the caller's own process."""
    import resource

    if os.getpriority(os.PRIO_PROCESS, 0) != settings["nice"]:  # first: this process's RLIMIT_NICE may allow it
        os.setpriority(os.PRIO_PROCESS, 0, settings["nice"])
    numbers = _rlimits()
    for name, (soft, hard) in settings["rlimits"].items():
        number = numbers.get(name)
        if number is not None and resource.getrlimit(number) != (soft, hard):
            resource.setrlimit(number, (soft, hard))
    if sorted(os.sched_getaffinity(0)) != settings["affinity"]:
        os.sched_setaffinity(0, settings["affinity"])
    os.umask(settings["umask"])


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
