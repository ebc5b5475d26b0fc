"""A preview's basis at the loop, for any tool: taken with the preview, re-checked before the
approved call runs; a tool declared to fail on a stale preview fails with the seam's text, and a
tool without a basis keeps working as before."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from toolwire import ChatMessage, RunOptions, ScriptedProvider, ToolLoop, ToolRegistry, tool
from toolwire.loop.loop import LoopResult
from toolwire.loop.seam import Refused, preview_changed
from toolwire.loop.state import RunState
from toolwire.policy.trace import RunTrace, ToolStep
from toolwire.tools.api import StalePreview, basis_of, stale_preview_of

from .fakes import call

ROWS: dict[str, str] = {}
RAN: list[str] = []


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    ROWS.clear()
    ROWS["k"] = "old"
    RAN.clear()
    yield


@tool(data_class="public", requires_approval=True)
def put(key: str, value: str) -> str:
    RAN.append(f"put {key}")
    ROWS[key] = value
    return f"put {key}"


@put.previewer
def _preview_put(key: str, value: str) -> list[str]:
    return [f"{key}: {ROWS.get(key)} → {value}"]


@put.basis
def _basis_put(key: str, value: str) -> str:
    return str(ROWS.get(key))


@tool(data_class="public", requires_approval=True, stale_preview="fail")
def put_or_fail(key: str, value: str) -> str:
    RAN.append(f"put_or_fail {key}")
    ROWS[key] = value
    return f"put {key}"


put_or_fail.basis(_basis_put)


@tool(data_class="public", requires_approval=True)
def put_unchecked(key: str, value: str) -> str:
    RAN.append(f"put_unchecked {key}")
    return f"put {key}"


@put_unchecked.previewer
def _preview_unchecked(key: str, value: str) -> list[str]:
    return [f"{key}: {ROWS.get(key)} → {value}"]


@tool(data_class="public", requires_approval=True)
def put_broken(key: str) -> str:
    RAN.append("put_broken")
    return "ok"


@put_broken.basis
def _basis_broken(key: str) -> str:
    raise OSError("no such device")


def loop(*names: str) -> tuple[ToolLoop, LoopResult]:
    calls = [call(n, {"key": "k"} if n == "put_broken" else {"key": "k", "value": "new"}, f"c{i}")
             for i, n in enumerate(names)]  # fmt: skip
    turns: list[dict[str, object]] = [{"tool_calls": calls}, {"content": "done"}]
    registry = ToolRegistry([put, put_or_fail, put_unchecked, put_broken])
    tools = ToolLoop(ScriptedProvider.from_turns(turns), registry)
    result = asyncio.run(tools.run([ChatMessage.user("go")], options=RunOptions(), run_id="r1"))
    return tools, result


def resume(tools: ToolLoop, state: RunState) -> tuple[LoopResult, RunTrace]:
    trace = RunTrace()
    return asyncio.run(tools.resume(state, approved=True, trace=trace, run_id="r1")), trace


def paused(result: LoopResult) -> RunState:
    assert result.suspended is not None and result.suspended.pause is not None
    return result.suspended


def test_the_traits_are_read_with_defaults_for_a_tool_without_them() -> None:
    assert basis_of(put) is not None and basis_of(put_unchecked) is None
    assert stale_preview_of(put) is StalePreview.WAIT_AGAIN
    assert stale_preview_of(put_or_fail) is StalePreview.FAIL
    assert stale_preview_of(object()) is StalePreview.WAIT_AGAIN  # type: ignore[arg-type]


def test_an_unchanged_basis_lets_the_approved_call_run() -> None:
    tools, result = loop("put")
    state = paused(result)
    assert state.pause is not None and state.pause.previews[0].basis is not None
    done, _ = resume(tools, state)
    assert done.reason == "completed" and RAN == ["put k"]


def test_a_changed_basis_waits_again_on_a_fresh_preview_and_nothing_of_the_turn_runs() -> None:
    tools, result = loop("put_unchecked", "put")
    state = paused(result)
    ROWS["k"] = "theirs"
    again, trace = resume(tools, state)
    assert again.reason == "suspended" and RAN == [] and trace.steps == []
    pause = paused(again).pause
    assert pause is not None and state.pause is not None
    assert pause.changed == ("c1",) and pause.digest != state.pause.digest
    assert [p.lines for p in pause.previews] == [("k: theirs → new",), ("k: theirs → new",)]
    done, _ = resume(tools, paused(again))
    assert done.reason == "completed" and RAN == ["put_unchecked k", "put k"]


def test_a_tool_declared_to_fail_fails_with_the_seams_text_and_the_turn_goes_on() -> None:
    tools, result = loop("put_or_fail", "put_unchecked")
    state = paused(result)
    ROWS["k"] = "theirs"
    done, trace = resume(tools, state)
    assert done.reason == "completed" and RAN == ["put_unchecked k"] and ROWS["k"] == "theirs"
    steps = [s for s in trace.steps if isinstance(s, ToolStep)]
    assert [(s.tool_name, s.tool_result, s.tool_is_error, s.tool_refused) for s in steps] == [
        ("put_or_fail", preview_changed("put_or_fail"), True, Refused.PREVIEW_CHANGED),
        ("put_unchecked", "put k", False, None),
    ]
    assert preview_changed("put_or_fail") == (
        'Error: tool "put_or_fail" was not executed: what it would change was changed by '
        "someone else after the operator approved the call. Read the current state and call "
        "the tool again if the change is still wanted."
    )


def test_a_tool_without_a_basis_runs_whatever_changed() -> None:
    tools, result = loop("put_unchecked")
    state = paused(result)
    assert state.pause is not None and state.pause.previews[0].basis is None
    ROWS["k"] = "theirs"
    done, _ = resume(tools, state)
    assert done.reason == "completed" and RAN == ["put_unchecked k"]


def test_a_basis_that_raises_the_same_way_again_lets_the_call_run() -> None:
    tools, result = loop("put_broken")
    state = paused(result)
    assert state.pause is not None and state.pause.previews[0].basis is not None
    done, _ = resume(tools, state)
    assert done.reason == "completed" and RAN == ["put_broken"]


def test_a_denied_turn_is_not_rechecked() -> None:
    tools, result = loop("put")
    ROWS["k"] = "theirs"
    denied = asyncio.run(tools.resume(paused(result), approved=False, run_id="r1"))
    assert denied.reason == "completed" and RAN == []
