"""Usage errors as a CLI says them: `error: <option> <rule>, got <value>` and a `Try ... --help` line, exit 2.

Every usage error of every command goes through `UsageErrorsGroup`, the app's group class: typer's own
(a bad number, a missing argument, an unknown option), the pydantic errors behind typer's conversions, and
the `OptionError`s that commands raise. `describe` is the one place that turns a pydantic error into an
option-named sentence, for typer's conversions and for `EvalConfig` alike; a message it has no wording of its
own for is scorers' `error_rule`, as in `describe_validation`. Messages are printed literally (the values
in them are the user's: `[/]` is no markup). Only pydantic, rich, scorers and evalduck.flows.report.text here: no prefect
import, so a usage error is reported in well under a second.

Every other error of evalduck's family (`evalduck.errors.EvalduckError`) that a command does not handle itself
is printed as `error: <message>` by the same group, with the exit status `exit_code` gives it: the one table
of which member of the family is a usage error (2) and which a failure (1).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from typer.core import TyperGroup

from evalduck.errors import EvalduckError
from evalduck.flows.report.text import literal
from evalduck.scorers import error_hint, error_rule

__all__ = ("OptionError", "UsageErrorsGroup", "describe", "fail", "label", "value_error", "config_error",
           "USAGE_ERROR", "FAILURE", "exit_code", "print_error")

# click's exception classes, whether typer vendors click (typer._click) or uses the click package.
_click_exceptions = sys.modules[typer.BadParameter.__module__]
ClickUsageError: type[Exception] = _click_exceptions.UsageError
_NoArgsIsHelp: tuple[type[Exception], ...] = tuple(
    c for c in (getattr(_click_exceptions, "NoArgsIsHelpError", None),) if c is not None
)

_BOUNDS = {"greater_than_equal": "ge", "less_than_equal": "le", "greater_than": "gt", "less_than": "lt"}
_RULES = {
    "ge": "must be at least {}",
    "le": "must be at most {}",
    "gt": "must be greater than {}",
    "lt": "must be less than {}",
}
_KINDS = {
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_type": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
}


USAGE_ERROR = 2  # the command line or the project's settings are wrong: fix them and run the same thing again
FAILURE = 1  # the command ran and failed: its data, a target, the store, a server or the run itself


class OptionError(ClickUsageError, EvalduckError):  # type: ignore[misc, valid-type]
    """A usage error whose message already names the option, the value given and the rule (exit 2)."""


def exit_code(exc: EvalduckError) -> int:
    """The exit status of an error of the family that ends a command, decided here for every command: a
    usage error for the command line, the project file and a run reference that names no run, a failure for
    the rest. Reading commands say a store they cannot read is a usage error of --db (results.py)."""
    from evalduck.flows.project.root import ProjectFileError
    from evalduck.flows.store.errors import UnknownRunError

    return USAGE_ERROR if isinstance(exc, (ClickUsageError, ProjectFileError, UnknownRunError)) else FAILURE


def print_error(exc: BaseException, err: Console | None = None) -> None:
    """An error that is not a usage error, as `error: <message>` on stderr: the message as is, every line."""
    err = err or Console(stderr=True, soft_wrap=True)
    err.print(literal(("error:", "red"), " ", str(exc), multiline=True))


def fail(message: str, ctx: typer.Context | None = None) -> NoReturn:
    """Stop the command with a usage error (exit 2); `message` is plain text (never rich markup)."""
    raise OptionError(message, ctx)


def _shown(value: Any, bare: bool = True) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if bare or not isinstance(value, str) else repr(value)


def describe(error: Mapping[str, Any], option: str, low: Any = None, high: Any = None) -> str:
    """One pydantic error as `<option> <rule>, got <value>`; `low`/`high`, when both known, give the range."""
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    bound = _BOUNDS.get(kind)
    if bound in ("ge", "le") and low is not None and high is not None:
        rule = f"must be between {_shown(low)} and {_shown(high)}"
    elif bound is not None:
        rule = _RULES[bound].format(_shown(ctx.get(bound)))
    elif kind == "literal_error":
        rule = f"must be one of {ctx.get('expected')}"
    elif kind in _KINDS:
        rule = _KINDS[kind]
    else:
        rule = error_rule(error)
    # A number that broke a bound is shown as typed; anything else quoted, so '' and ' x' read as such.
    return f"{option} {rule}, got {_shown(error.get('input'), bare=bound is not None)}{error_hint(error)}"


def value_error(option: str, value: Any, problem: str) -> str:
    """`<option> '<value>': <problem>`, for values that are well-formed but name nothing usable."""
    return f"{option} {str(value)!r}: {problem}"


def label(ctx: typer.Context, name: str) -> str:
    """How the user gave parameter `name` (of this command or a parent): `--concurrency`, `DATASET`, or the
    environment variable with the option (`EVALDUCK_DB (--db)`) when the value came from there."""
    here: typer.Context | None = ctx
    while here is not None:
        for param in here.command.params:
            if param.name == name:
                return _param_label(here, param)
        here = here.parent
    return name


def _param_label(ctx: Any, param: Any) -> str:
    source = ctx.get_parameter_source(param.name) if param.name else None
    envvar = getattr(param, "envvar", None)
    if getattr(param, "param_type_name", "") == "argument":
        return (param.name or "").upper()
    opts = list(param.opts)
    option = next((o for o in opts if o.startswith("--")), opts[0] if opts else str(param.name))
    if source is not None and source.name == "ENVIRONMENT" and isinstance(envvar, str):
        return f"{envvar} ({option})"
    return option


def _param_bounds(param: Any) -> tuple[Any, Any]:
    info = getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
    return getattr(info, "min", None), getattr(info, "max", None)


def _field_bounds(model: type[BaseModel], field: str) -> tuple[Any, Any]:
    info = model.model_fields.get(field)
    metadata = info.metadata if info is not None else []
    low = next((m.ge for m in metadata if getattr(m, "ge", None) is not None), None)
    high = next((m.le for m in metadata if getattr(m, "le", None) is not None), None)
    return low, high


def config_error(
    ctx: typer.Context, exc: ValidationError, model: type[BaseModel], param_of: Mapping[str, str]
) -> OptionError:
    """A model's validation error as one option-named line per problem.

    `param_of` maps the model's field names to the command's parameter names where they differ."""
    lines = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else ""
        low, high = _field_bounds(model, field)
        lines.append(describe(error, label(ctx, param_of.get(field, field)), low, high))
    return OptionError("\n".join(lines), ctx)


def _message(exc: Any) -> str:
    cause = exc.__cause__
    param, ctx = getattr(exc, "param", None), getattr(exc, "ctx", None)
    if isinstance(cause, ValidationError) and cause.errors() and param is not None and ctx is not None:
        return describe(cause.errors()[0], _param_label(ctx, param), *_param_bounds(param))
    return exc.format_message()


def show(exc: Any) -> None:
    """Print a usage error to stderr: the message, then where help is."""
    err = Console(stderr=True, soft_wrap=True)
    for line in _message(exc).splitlines() or [""]:
        err.print(literal(("error:", "red"), " ", line))
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        err.print(literal(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.", style="dim"))


@contextmanager
def _reported() -> Iterator[None]:
    try:
        yield
    except _NoArgsIsHelp:
        raise
    except ClickUsageError as exc:
        show(exc)
        raise typer.Exit(getattr(exc, "exit_code", USAGE_ERROR)) from None
    except EvalduckError as exc:  # one its command left to the family's rule
        print_error(exc)
        raise typer.Exit(exit_code(exc)) from None


class UsageErrorsGroup(TyperGroup):
    """The app's group: usage errors from parsing any command, or raised by one, are printed by `show`; any
    other error of the family a command raises, by `print_error` with its `exit_code`.

    Parsing the group's own options happens in `make_context`; the subcommand's, and the command itself, in
    `invoke`. Both paths raise `typer.Exit`, which typer turns into the exit status (also under CliRunner).
    """

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _reported():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _reported():
            return super().invoke(ctx)

