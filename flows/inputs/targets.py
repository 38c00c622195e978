"""Targets: what produces the output to score. None (the item's own `output`), a Python callable (sync or
async; "module:function" from the CLI/UI), or "model:<litellm model>"; either of the last two with an optional
system prompt (a callable takes it as its `system_prompt` parameter)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import importlib
import inspect
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalduck.errors import EvalduckError
from evalduck.flows.inputs.datasets import DatasetItem
from evalduck.scorers import JudgeSettings, JudgeTransport, canonical_json, complete
from evalduck.scorers._cache_key import SourceDigest, code_digest

__all__ = ("Target", "resolve_target", "TargetError", "importable_here")

KEY_FORMAT = "evalduck-target-v1"
DEFAULT_TIMEOUT_S = 120.0


class TargetError(EvalduckError, ValueError):
    """A target string that cannot be resolved: ``spec`` is the target as given, ``problem`` what is wrong."""

    def __init__(self, spec: str | None, problem: str) -> None:
        self.spec = spec
        self.problem = problem
        super().__init__(f"target {spec!r}: {problem}" if spec is not None else f"target {problem}")


def _digest(components: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(components, default=str).encode("utf-8")).hexdigest()


def _callable_identity(fn: Callable[..., Any]) -> tuple[dict[str, Any], SourceDigest | None]:
    """Module, name and the digest of its code, the same one that keys a custom scorer's steps
    (``code_digest``: the defining module's whole source and the user's own modules it imports), so an edit
    there invalidates its cached outputs; and that digest, whose files name what changed."""
    found = code_digest(fn)
    if found is not None:
        digest = found.digest
    else:
        code = getattr(fn, "__code__", None)
        digest = hashlib.sha256((code.co_code.hex() if code is not None else repr(fn)).encode("utf-8")).hexdigest()
    return {
        "kind": "callable",
        "name": f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}",
        "source_sha256": digest,
    }, found


@dataclass(frozen=True)
class Target:
    """A resolved target. ``kind`` is "output", "callable" or "model"."""

    kind: str
    label: str
    fn: Callable[..., Any] | None = None
    settings: JudgeSettings | None = None
    system_prompt: str | None = None
    identity: dict[str, Any] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT_S  # seconds per call (never part of the cache key)
    source: SourceDigest | None = None  # a callable's code digest, with its files (``identity`` holds the digest)

    @property
    def calls(self) -> bool:
        return self.kind != "output"

    def key_components(self, item: DatasetItem) -> dict[str, Any]:
        """The named parts of ``cache_key``."""
        return {"format": KEY_FORMAT, "target": self.identity, "input": item.input,
                "request_context": item.request_context}

    def cache_key(self, item: DatasetItem) -> str:
        """Target identity + the item's input and request context (never run ids, timeouts or keys)."""
        return _digest(self.key_components(item))

    async def acall(self, item: DatasetItem, *, transport: JudgeTransport | None = None) -> dict[str, Any]:
        """One attempt: {"output": ..., "usage": [JudgeUsage dicts], "latency_s": seconds it took}. A model
        target sends its request through ``transport`` (default: litellm in this process). The latency is
        part of the cached result: a cached output keeps the time its call took (the target's speed, which
        the sweep leaderboard's p50/p95 compare), not the cache's."""
        started = time.perf_counter()
        if self.kind == "model":
            result = await self._ask_model(item, transport)
            return {**result, "latency_s": round(time.perf_counter() - started, 6)}
        try:
            output = await asyncio.wait_for(self._invoke(item.input), self.timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"target {self.label} gave no answer within {self.timeout:g}s (target_timeout_s)") from None
        if output is not None and not isinstance(output, (str, list)):
            raise TypeError(f"target {self.label} must return a string or chat messages, got {type(output).__name__}")
        return {"output": output, "usage": [], "latency_s": round(time.perf_counter() - started, 6)}

    async def _invoke(self, value: Any) -> Any:
        assert self.fn is not None
        fn = self.fn if self.system_prompt is None else functools.partial(self.fn, system_prompt=self.system_prompt)
        if inspect.iscoroutinefunction(self.fn):
            return await fn(value)
        output = await _in_daemon_thread(fn, value, f"target {self.label}")
        return await output if inspect.isawaitable(output) else output

    def messages(self, item: DatasetItem) -> list[dict[str, str]]:
        """What a ``model:`` target sends for the item: its system prompt, then the item's input as chat."""
        messages: list[dict[str, str]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        if isinstance(item.input, str):
            messages.append({"role": "user", "content": item.input})
        else:
            messages.extend({"role": m["role"], "content": m["content"]} for m in item.input)
        return messages

    async def _ask_model(self, item: DatasetItem, transport: JudgeTransport | None) -> dict[str, Any]:
        # The judge's request path: same transport, same error classes (transient vs config), no retries.
        assert self.settings is not None
        content, usage = await complete(self.settings, self.messages(item), label=f"target {self.label}",
                                        transport=transport)
        return {"output": content or "", "usage": [usage.model_dump(mode="json")]}


async def _in_daemon_thread(fn: Callable[[Any], Any], value: Any, name: str) -> Any:
    """``fn(value)`` on a thread of its own, a daemon: a call that never returns (past its timeout, or when
    the run is cancelled) cannot keep the process alive at exit, as a thread of the loop's default executor
    would (interpreter exit joins those: Ctrl-C and SIGTERM waited on a hung target for ever)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if not future.done():
            future.set_exception(error) if error is not None else future.set_result(result)

    def work() -> None:
        try:
            result, error = context.run(fn, value), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is closed: nobody waits for this call any more
            pass

    threading.Thread(target=work, name=name, daemon=True).start()
    return await future


def importable_here() -> None:
    """The working directory on the import path, first, as `python -m` puts it: a `module:function` target is
    found in the folder a run or sweep runs in (`evalduck run`, `evalduck sweep`, the run-sweep deployment, whose
    flow runs in the project folder)."""
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.insert(0, here)


def _where_to_look(missing: str) -> str:
    """Why module ``missing`` was not found, for a user whose file is right there: where imports look, and
    what to do."""
    top = missing.replace(".", "/")
    here = Path.cwd()
    on_path = any(Path(entry or ".").resolve() == here for entry in sys.path)
    if on_path:
        return (f"; the current folder {here} is on the import path, but it holds no {top}.py or {top}/: "
                "run from the folder that holds it, or add that folder to PYTHONPATH")
    found = next((f for f in (f"{top}.py", top) if (here / f).exists()), None)
    if found is not None:
        return (f"; ./{found} is here, but the current folder is not on the import path (sys.path): "
                "add it with PYTHONPATH=. (`evalduck run` adds it itself)")
    return f"; add the folder that holds {top}.py to PYTHONPATH (the current folder {here} is not on sys.path)"


def _import_callable(spec: str) -> Callable[..., Any]:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise TargetError(spec, "expected 'module:function' or 'model:<litellm model>'")
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        dotted = module_name.removesuffix(".py").replace("\\", "/").strip("./").replace("/", ".")
        raise TargetError(spec, f"give the module's import name, not its file: '{dotted}:{attr}' "
                                "(imported from the current folder, or from PYTHONPATH)")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any failure of the module's own code is the target's problem
        shown = str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
        # The hint only when the module itself is missing, not a module it imports.
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        hint = _where_to_look(missing) if missing and f"{module_name}.".startswith(f"{missing}.") else ""
        raise TargetError(spec, f"cannot import module {module_name!r} ({shown}){hint}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TargetError(spec, f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TargetError(spec, f"{attr!r} is not callable")
    return obj


def resolve_target(
    target: str | Callable[..., Any] | None,
    *,
    system_prompt: str | None = None,
    api_base: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> Target:
    """Resolve ``None`` / a callable / "module:function" / "model:<litellm model>".

    Raises:
        TargetError: an unknown form, a module that does not import, or a missing attribute.
    """
    if target is None or target == "":
        return Target(kind="output", label="output")
    if callable(target):
        return _callable_target(target, None, system_prompt, timeout)
    if not isinstance(target, str):
        raise TargetError(None, f"must be None, a callable or a string, got {type(target).__name__}")
    if target.startswith("model:"):
        model = target.removeprefix("model:").strip()
        if not model:
            raise TargetError(target, "needs a litellm model after 'model:', e.g. 'model:openai/gpt-4o-mini'")
        settings = JudgeSettings(model=model, api_base=api_base, timeout=timeout)
        identity = {"kind": "model", **settings.key_fields(), "system_prompt": system_prompt}
        return Target(kind="model", label=target, settings=settings, system_prompt=system_prompt, identity=identity)
    return _callable_target(_import_callable(target), target, system_prompt, timeout)


def _takes_system_prompt(fn: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False
    return any(p.name == "system_prompt" and p.kind is not p.POSITIONAL_ONLY or p.kind is p.VAR_KEYWORD
               for p in parameters)


def _callable_target(fn: Callable[..., Any], spec: str | None, system_prompt: str | None, timeout: float) -> Target:
    """A Python function as the target. A system prompt goes to it as ``system_prompt=`` (then part of its
    outputs' cache key), so one function serves several prompts; one that takes no such parameter is refused
    rather than run as if the prompt had been used."""
    identity, source = _callable_identity(fn)
    label = spec if spec is not None else identity["name"]
    if system_prompt is not None:
        if not _takes_system_prompt(fn):
            raise TargetError(label, "was given a system prompt, but the function takes no `system_prompt` "
                                     "parameter: add `system_prompt: str | None = None` to it (evalduck passes the "
                                     "prompt there), or drop the system prompt")
        identity = {**identity, "system_prompt": system_prompt}
    return Target(kind="callable", label=label, fn=fn, system_prompt=system_prompt, identity=identity,
                  timeout=timeout, source=source)
