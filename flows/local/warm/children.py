"""The warm starter's children while they run: fork one that never falls back into the starter's loop, watch
its pidfd and its client's socket on the starter's selector, pass the client's signals on to its process
group, and send the client the child's exit status.

A child's client is the socket of the `evalduck` process that asked for it: closed (even by SIGKILL), the
child's process group is killed. Each selector key's data is the bound method that handles its event.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from evalduck.flows.local.warm.wire import close_fds, recv, send

__all__ = ("Children", "quietly")

# What a client may pass on to its run's process group, as what: Ctrl-Z (SIGTSTP) stops the run with SIGSTOP,
# which nothing in the run can catch and the kernel never drops.
_FORWARDABLE = {int(s): s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCONT,
                                     signal.SIGWINCH)} | {int(signal.SIGTSTP): signal.SIGSTOP}


def quietly(call: Callable[..., object], *args: Any) -> None:
    """``call(*args)``, an OSError ignored (a process or a peer gone already)."""
    try:
        call(*args)
    except OSError:
        pass


@dataclass
class _Child:
    pid: int
    pidfd: int
    client: socket.socket | None  # None for a judge child or the renderer: nobody waits for its status


class Children:
    """The running children of one starter, by pid; ``exited(pid, status)`` is told of each one's end."""

    def __init__(self, selector: selectors.BaseSelector, exited: Callable[[int, int], None]) -> None:
        self.selector = selector
        self.exited = exited
        self.records: dict[int, _Child] = {}

    def __contains__(self, pid: object) -> bool:
        return pid in self.records

    def fork(self, become: Callable[[], object]) -> int:
        """Fork a child that runs ``become`` and exits (70 when ``become`` raises or returns): whatever
        happens in it, a child never falls back into the starter's loop. The child's pid; OSError when no
        fork."""
        pid = os.fork()
        if pid == 0:
            try:
                become()
            except BaseException:  # noqa: BLE001 - a child must never fall back into the loop
                traceback.print_exc()
            os._exit(70)
        return pid

    def watch(self, pid: int, client: socket.socket | None) -> None:
        """Wait for the child's exit (its pidfd) and, for a run, for its client's messages."""
        record = _Child(pid, os.pidfd_open(pid), client)
        self.records[pid] = record
        self.selector.register(record.pidfd, selectors.EVENT_READ, partial(self._reap, record))
        if client is not None:
            self.selector.register(client, selectors.EVENT_READ, partial(self._client_event, record))

    def forget(self) -> None:
        """In a new child: close the other children's pidfds and client sockets (the selector is not closed)."""
        for other in self.records.values():
            quietly(os.close, other.pidfd)
            if other.client is not None:
                other.client.close()
        self.records.clear()

    def _client_event(self, record: _Child) -> None:
        if record.client is None:  # dropped by its child's exit, in the same round of the selector
            return
        try:
            message, fds = recv(record.client)
        except OSError:
            message, fds = None, []
        close_fds(fds)
        if message is None:  # the client is gone (killed, even by SIGKILL): so is its run
            quietly(os.killpg, record.pid, signal.SIGKILL)
            quietly(os.kill, record.pid, signal.SIGKILL)
            self._drop_client(record)
        elif message.get("signal") in _FORWARDABLE:
            quietly(os.killpg, record.pid, _FORWARDABLE[message["signal"]])

    def _reap(self, record: _Child) -> None:
        _, status = os.waitpid(record.pid, 0)
        self.selector.unregister(record.pidfd)
        os.close(record.pidfd)
        self.records.pop(record.pid, None)
        self.exited(record.pid, status)
        if record.client is not None:
            quietly(send, record.client, {"exit": os.waitstatus_to_exitcode(status)})
            self._drop_client(record)

    def _drop_client(self, record: _Child) -> None:
        if record.client is not None:
            self.selector.unregister(record.client)
            record.client.close()
            record.client = None
