"""How a CLI run ends early: one line and an exit status (a signal, a locked file, any other error), never a
traceback, with the ``--resume`` that finishes the run where one applies."""

from __future__ import annotations

import contextlib
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import typer
from rich.console import Console

from evalduck.flows.cli.errors import print_error
from evalduck.flows.report.text import literal

if TYPE_CHECKING:
    from evalduck.flows.store import StoreDiskError, StoreLockedError

E = TypeVar("E", bound=BaseException)

__all__ = ("Terminated", "sigterm_as_interrupt", "stop", "lock_error", "disk_error", "resume_command", "stop_locked",
           "stop_disk")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is, so that it ends as Ctrl-C ends it: cancelled, what was stored kept."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM, and Ctrl-C, raised where the run is. Ctrl-C gets a handler of ours too: with Python's own,
    ``asyncio.run`` only cancels its main task on the first Ctrl-C, and a cancellation that lands inside
    Prefect's task machinery can be absorbed, leaving the run waiting on its hung target (seen in CI)."""

    def terminate(signum: int, frame: object) -> None:
        raise Terminated()

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt()

    previous = signal.signal(signal.SIGTERM, terminate)
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if previous_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous_int)


def stop(err: Console, exc: Exception, code: int) -> NoReturn:
    """An error that is not a usage error (bad rows, the store, the run): its message as is, then exit."""
    print_error(exc, err)
    raise typer.Exit(code) from None


def lock_error(exc: BaseException) -> StoreLockedError | None:
    """The StoreLockedError behind `exc` (the engine wraps it in its StoreWriteError), if one is."""
    from evalduck.flows.store import StoreLockedError

    return _behind(exc, StoreLockedError)


def disk_error(exc: BaseException) -> StoreDiskError | None:
    """The StoreDiskError (a full or capped disk) behind `exc`, if one is."""
    from evalduck.flows.store import StoreDiskError

    return _behind(exc, StoreDiskError)


def _behind(exc: BaseException, kind: type[E]) -> E | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def resume_command(run_id: str) -> str:
    """This command line, resuming `run_id` (any --resume given is replaced), ready to paste."""
    args, rest = [], iter(sys.argv[1:])
    for arg in rest:
        if arg == "--resume":
            next(rest, None)
        elif not arg.startswith("--resume="):
            args.append(arg)
    return shlex.join(["evalduck", *args, "--resume", run_id])


def stop_locked(err: Console, locked: StoreLockedError, db: Path) -> NoReturn:
    """One line for a run stopped by the file lock: who held it, what is stored, how to finish the run."""
    who = f"pid {locked.holder_pid} ({locked.holder})" if locked.holder_pid is not None else "another process"
    timeout = f" for more than {locked.timeout:g} s" if locked.timeout is not None else ""
    if locked.run_id is None:  # before the run had started writing: nothing of it is stored
        stop(err, locked, 1)
    line = (f"run {locked.run_id} stopped: {who} held {locked.path or db}{timeout} (EVALDUCK_DB_LOCK_TIMEOUT); "
            f"{_stored(db, locked.run_id)}. Close that process, then finish the run with: "
            f"{resume_command(locked.run_id)}")
    err.print(literal(("error:", "red"), " ", line), highlight=False)
    raise typer.Exit(1) from None


def stop_disk(err: Console, disk: StoreDiskError, db: Path) -> NoReturn:
    """One line for a run the disk refused to store (full, over quota or the file size limit): the file, what
    happened, what is stored, and what to do: make room, then finish the run, or (before it started) another
    --db."""
    remedy = disk.remedy.capitalize()
    if disk.run_id is not None:
        line = (f"run {disk.run_id} stopped: {disk.file}: {disk.meaning}; {_stored(db, disk.run_id)}. "
                f"{remedy}, then finish the run with: {resume_command(disk.run_id)}")
    elif disk.at_start:  # its start was rolled back
        line = (f"{disk.file}: {disk.meaning}; the run did not start and the file is as it was. {remedy}, or "
                "choose another --db.")
    else:  # e.g. after the run's results, at its report's reads
        line = f"{disk.file}: {disk.meaning}; what was stored before stays. {remedy}."
    err.print(literal(("error:", "red"), " ", line), highlight=False)
    raise typer.Exit(1) from None


def _stored(db: Path, run_id: str) -> str:
    """What a stopped run has stored, counted on a read-only opening when the file can only be read."""
    from evalduck.flows.store import Store, StoreError

    try:
        (kept, total), = Store(db, lock_timeout=2, reader=True).sql(
            "SELECT count(*) FILTER (WHERE status IN ('scored', 'skipped')), count(*) FROM scores WHERE run_id = ?",
            [run_id],
        ).rows
    except StoreError:
        return "what it wrote before is stored"
    return f"{kept} finished cell(s) are stored ({total - kept} in error)"
