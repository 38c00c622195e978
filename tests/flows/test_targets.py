"""Targets (flows/inputs/targets.py): a Python function given a system prompt takes it as its `system_prompt`
parameter, which then keys its outputs; one without that parameter is refused; every call is timed."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from evalduck.flows.inputs.datasets import DatasetItem
from evalduck.flows.inputs.targets import TargetError, resolve_target

ITEM = DatasetItem(item_id="q1", input="Can I return it?")


def plain(question: str) -> str:
    return "yes"


def prompted(question: str, system_prompt: str | None = None) -> str:
    time.sleep(0.05)
    return f"{system_prompt or 'no prompt'}: {question}"


async def prompted_async(question: str, *, system_prompt: str | None = None) -> str:
    await asyncio.sleep(0.05)
    return f"{system_prompt}: {question}"


def anything(question: str, **options: Any) -> str:
    return f"{options.get('system_prompt')}: {question}"


@pytest.mark.parametrize("fn", [prompted, prompted_async, anything])
def test_a_function_takes_the_system_prompt_as_its_parameter(fn: Any) -> None:
    target = resolve_target(fn, system_prompt="Be brief.")
    result = asyncio.run(target.acall(ITEM))
    assert result["output"] == "Be brief.: Can I return it?"


def test_the_system_prompt_keys_a_functions_outputs_and_no_prompt_keeps_the_old_key() -> None:
    brief, kind = (resolve_target(prompted, system_prompt=p).cache_key(ITEM) for p in ("Be brief.", "Be kind."))
    assert brief != kind
    assert resolve_target(prompted).cache_key(ITEM) == resolve_target(prompted, system_prompt=None).cache_key(ITEM)
    assert "system_prompt" not in resolve_target(prompted).identity  # caches written before keep hitting


def test_a_function_without_the_parameter_is_refused_rather_than_run_as_if_prompted() -> None:
    with pytest.raises(TargetError) as caught:
        resolve_target(plain, system_prompt="Be brief.")
    assert "takes no `system_prompt` parameter: add `system_prompt: str | None = None`" in str(caught.value)
    assert resolve_target(plain).system_prompt is None  # without a prompt it is a target as before


def test_every_call_is_timed() -> None:
    result = asyncio.run(resolve_target(prompted, system_prompt="x").acall(ITEM))
    assert result["latency_s"] >= 0.05  # it slept that long; the time is the call's, not a default
    assert resolve_target(None).calls is False  # a dataset's own outputs are never called, so never timed
