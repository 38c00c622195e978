"""The warm starter process: import what every run imports, then fork one child per request.

Started in the background next to the folder's Prefect server (flows/local/server.py,
flows/local/install/processes.py) as ``python -P -m evalduck.flows.local.warm.starter STATE_DIR [--after PID]``
(wire.MARKER names this module: how `evalduck stop` recognises the recorded pid); recorded in the folder's
state file; ended by `evalduck stop` (SIGTERM). It imports its preloads (flows/local/warm/preload.py), checks
that no import left a thread running, forks the folder's chart renderer (flows/local/warm/renderer.py) and
serves requests in one selector loop (flows/local/warm/loop.py). The user's code (a target module, custom
scorers, the dataset) is never imported here: each child imports it itself, fresh.

It does not start off Linux (wire.SUPPORTED), nor unless it listens in a folder of this user's that nobody
else may enter (flows/local/warm/wire.py ``own_folder``); it then says why in its log and in its status file,
which a client's `-v` prints.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn

from evalduck.flows.local.warm.loop import Starter, log
from evalduck.flows.local.warm.preload import PRELOADS, preload
from evalduck.flows.local.warm.wire import (
    DEFAULT_PRELOAD_S,
    MARKER,
    SUPPORTED,
    UNSUPPORTED_WHY,
    own_folder,
    socket_path,
    starter_status,
    write_starter_status,
)

__all__ = ("MARKER", "main")


def _after(pid: int, limit_s: float = 300.0) -> None:
    """Wait for the run that started this starter to end, within a limit: the preloads take seconds of CPU,
    which on a small machine would slow that run down; the next run needs them, not this one."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # already gone
        return
    select.select([pidfd], [], [], limit_s)
    os.close(pidfd)


def _check_folder(state_dir: Path) -> None:
    """Exit unless the sockets' folder is the state folder or one of this user's only (wire.own_folder)."""
    folder = socket_path(state_dir).parent
    try:
        if folder != state_dir:
            own_folder(folder)
    except OSError as exc:
        _not_serving(state_dir, str(exc))


def _not_serving(state_dir: Path, why: str) -> NoReturn:
    """Exit, saying why in the log and in the status file (a client's `-v` prints it); the last import time
    is kept for the folder's next starter."""
    log(f"not serving: {why}")
    kept = {k: v for k, v in (starter_status(state_dir) or {}).items() if k == "preload_s"}
    write_starter_status(state_dir, phase="not serving", reason=why, **kept)
    sys.exit(1)


def main(argv: list[str] | None = None) -> NoReturn:
    """``STATE_DIR [--after PID]``: check the folder and the platform, preload, then serve until stopped."""
    args = sys.argv[1:] if argv is None else argv
    state_dir = Path(args[0]).resolve()
    if not SUPPORTED:  # its pidfds, SO_PEERCRED and prctl: ensure_starter starts none there, nor should anyone
        _not_serving(state_dir, UNSUPPORTED_WHY)
    _check_folder(state_dir)  # before the waits and the preloads: a folder that is not ours ends it at once
    previous = starter_status(state_dir) or {}
    expected = previous.get("preload_s") if isinstance(previous.get("preload_s"), (int, float)) else DEFAULT_PRELOAD_S
    if len(args) == 3 and args[1] == "--after":
        write_starter_status(state_dir, phase="waiting", after=int(args[2]), expected_s=expected)
        _after(int(args[2]))
    # A run that starts now finds this in the status file and waits for the preloads when they will be done
    # sooner than its own imports (flows/local/warm/client.py): runs back to back are forked from here.
    write_starter_status(state_dir, phase="importing", since=time.time(), expected_s=expected)
    starter = Starter(state_dir)  # the fingerprint is taken before the imports it stands for
    took = preload()
    log(f"preloaded {len(PRELOADS)} modules in {took:.1f} s")
    threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if threads:
        _not_serving(state_dir, f"the preloads started threads {threads}, which a forked child would inherit broken")

    def stop(_signum: int, _frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    _check_folder(state_dir)  # again, right before the binds: it may have gone meanwhile
    starter.ensure_renderer()  # it starts its JavaScript runtime while the starter waits for the first run
    starter.listen()
    starter.preload_s = took
    starter.write_status()
    log(f"listening on {starter.path}")
    try:
        starter.serve_forever()
    except SystemExit:
        pass
    finally:
        starter.close()
    os._exit(0)  # nothing to flush or tear down: not the seconds of finalising every preloaded module


if __name__ == "__main__":
    main()
