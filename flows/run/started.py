"""Who hears that a run is stored (its id, before any of its cells): the warm starter's child, which tells its
client the id (flows/local/warm/child.py), and a sweep, which names each of its runs in the sweep as soon as it
exists, so that a sweep killed mid-run is resumed with that run (flows/sweep_flow.py). A sweep's runs go side by
side on threads of their own, so its hook lives in the context that started each run, not in a global."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ("announce", "on_run_started", "set_process_hook")

_process_hook: Callable[[str], None] | None = None
_HERE: ContextVar[Callable[[str], None] | None] = ContextVar("evalduck_run_started", default=None)


def set_process_hook(hook: Callable[[str], None] | None) -> None:
    """Call ``hook(run_id)`` for every run of this process (the warm starter's child: one run)."""
    global _process_hook
    _process_hook = hook


@contextlib.contextmanager
def on_run_started(hook: Callable[[str], None]) -> Iterator[None]:
    """Call ``hook(run_id)`` when a run started in this context (or a copy of it) is stored."""
    token = _HERE.set(hook)
    try:
        yield
    finally:
        _HERE.reset(token)


def announce(run_id: str) -> None:
    """The run ``run_id`` is stored: tell whoever asked."""
    for hook in (_HERE.get(), _process_hook):
        if hook is not None:
            hook(run_id)
