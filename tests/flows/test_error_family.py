"""One error family: every exception class evalduck defines derives from `EvalduckError` (but for the few
internal ones below, each with its reason), and the CLI's one table gives each member its exit status."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

from evalduck.errors import EvalduckError

# Exception classes that never reach a user as an error, and why.
INTERNAL = {
    # Ctrl-C's twin for SIGTERM: the run ends cancelled (exit 143), as a KeyboardInterrupt, not an error.
    "evalduck.flows.cli.run_stops.Terminated",
    # Another user's socket: the warm client runs the command in-process instead (and says so). Its module is
    # stdlib-only and is an OSError where the socket calls' errors are caught.
    "evalduck.flows.local.warm.wire.NotOurs",
}


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined at the top of a module of evalduck.flows or evalduck.scorers."""
    found: dict[str, type[BaseException]] = {}
    for package in ("evalduck.flows", "evalduck.scorers"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for obj in vars(module).values():
                if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                    found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_error_class_of_flows_and_scorers_is_of_the_family() -> None:
    classes = _exception_classes()
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, EvalduckError))
    assert outside == sorted(INTERNAL), (
        "derive these from evalduck.errors.EvalduckError, or add them to INTERNAL with the reason no user sees "
        f"them: {sorted(set(outside) - INTERNAL)}; gone from the code, drop them from INTERNAL: "
        f"{sorted(INTERNAL - set(outside))}"
    )
    # The walk reached the layers whose errors users see (a broken walk would find nothing to check).
    for name in ("StoreError", "ServeError", "DatasetError", "TargetError", "ProjectFileError", "FailFast",
                 "JudgeConfigError", "OptionError"):
        assert any(key.endswith(f".{name}") for key in classes), name


def test_the_family_keeps_the_builtin_bases_callers_catch() -> None:
    from evalduck.flows.inputs.datasets import DatasetError
    from evalduck.flows.inputs.targets import TargetError
    from evalduck.flows.local.install import ServeError
    from evalduck.flows.store import StoreLockedError, UnknownRunError

    assert issubclass(DatasetError, ValueError) and issubclass(TargetError, ValueError)
    assert issubclass(ServeError, RuntimeError) and issubclass(UnknownRunError, LookupError)
    assert issubclass(StoreLockedError, TimeoutError)


def test_evalduck_and_the_library_export_the_one_base() -> None:
    import evalduck
    import evalduck.scorers

    assert evalduck.EvalduckError is EvalduckError is evalduck.scorers.EvalduckError
    assert "EvalduckError" in evalduck.__all__


def _members() -> list[tuple[EvalduckError, int]]:
    from evalduck.flows.cli.errors import OptionError
    from evalduck.flows.engine import FailFast, MisconfiguredRun, StoreWriteError
    from evalduck.flows.inputs.datasets import DatasetError, DatasetPathError
    from evalduck.flows.inputs.targets import TargetError
    from evalduck.flows.local.install import ServeError
    from evalduck.flows.project.root import ProjectFileError
    from evalduck.flows.project.scaffold import InitError
    from evalduck.flows.project.schedules import ScheduleError
    from evalduck.flows.store import SchemaVersionError, StoreError, StoreLockedError, UnknownRunError
    from evalduck.scorers import ConfigError, JudgeConfigError

    return [
        (OptionError("--concurrency must be at least 1, got 0"), 2),
        (ProjectFileError("evalduck.toml: unknown key `x`"), 2),
        (UnknownRunError("no run matches 'nope'"), 2),
        (DatasetError(["data.jsonl:1: missing `input`"]), 1),
        (DatasetPathError(Path("nope.jsonl"), "no such file"), 1),
        (TargetError("mod:fn", "no module named 'mod'"), 1),
        (StoreError("x.duckdb is not a DuckDB file"), 1),
        (SchemaVersionError("x.duckdb has schema 99"), 1),
        (StoreLockedError("x.duckdb is locked"), 1),
        (StoreWriteError("could not write"), 1),
        (FailFast("stopped at the first error"), 1),
        (MisconfiguredRun("the judge rejected the key"), 1),
        (ServeError("the server did not start"), 1),
        (InitError("evalduck.toml exists"), 1),
        (ScheduleError("no deployment 'x'"), 1),
        (ConfigError("`threshold` must be between 0 and 1"), 1),
        (JudgeConfigError("no API key"), 1),
    ]


def test_the_cli_gives_each_member_its_exit_status() -> None:
    from evalduck.flows.cli.errors import exit_code

    got = {type(error).__name__: exit_code(error) for error, _ in _members()}
    assert got == {type(error).__name__: code for error, code in _members()}
