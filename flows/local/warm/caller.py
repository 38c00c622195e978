"""What of a caller's process a child forked by the warm starter must match or take on, so that it behaves as a
fresh process would: the interpreter and source tree, the environment variables fixed at start or import, the
umask, nice value, limits, CPUs and ignored signals; and the scrubbed environment the starter itself starts with.

Standard library only: the thin client imports this before deciding whether to import anything else.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = (
    "PACKAGES_ROOT",
    "apply_process",
    "caller_process",
    "frozen_env",
    "identity",
    "ignored_signals",
    "starter_env",
)

# The folder holding the `flows` and `scorers` packages (an editable install's source tree).
PACKAGES_ROOT = str(Path(sys.modules["evalduck.flows"].__file__).resolve().parents[1])
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


def identity() -> dict[str, str]:
    """The interpreter and source tree of this process: a starter serves only callers with the same ones."""
    return {"executable": sys.executable, "root": PACKAGES_ROOT}


def frozen_env(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` a forked child cannot apply (their effect is fixed at start or import)."""
    values = {**_DEFAULTED, **env}
    return {name: values[name] for name in _FROZEN_ENV if name in values}


def starter_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` scrubbed for a starter: the variables an interpreter and the preloads read at start
    (``_STARTER_NAMES``, ``_STARTER_PREFIXES``), none whose name says it holds a secret (provider API keys,
    PREFECT_API_AUTH_STRING, tokens): the starter lives for many runs, and each run sends its own."""
    return {name: value for name, value in env.items()
            if (name in _STARTER_NAMES or name.startswith(_STARTER_PREFIXES))
            and not any(word in name.upper() for word in _SECRET_WORDS)}


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
