"""Every call the runtime refuses carries its reason as data on its step (``tool_refused``):
the governance log and the telemetry read that, never the text the model reads."""

from __future__ import annotations

import asyncio
from typing import Any

from toolwire import ChatMessage, RunOptions, ScriptedProvider, ToolLoop, ToolRegistry, tool
from toolwire.core.errors import ToolRefusal
from toolwire.loop.seam import Refused
from toolwire.policy.trace import RunTrace, ToolStep

from .fakes import call
from .test_suspension import ask_city, paused, read_row, resume, start, turns_with, write_row


@tool(data_class="public")
def count(n: int) -> str:
    return str(n * 2)


@tool(data_class="public")
def fussy() -> str:
    raise ToolRefusal("no, not today")


@tool(data_class="public")
def broken() -> str:
    raise RuntimeError("down")


def tool_steps(turns: list[dict[str, Any]], **options: Any) -> list[ToolStep]:
    loop = ToolLoop(ScriptedProvider.from_turns(turns), ToolRegistry([count, fussy, broken]))
    trace = RunTrace()
    asyncio.run(loop.run([ChatMessage.user("hi")], options=RunOptions(**options), trace=trace))
    return trace.of_kind(ToolStep)


def reasons(steps: list[ToolStep]) -> list[tuple[str, str | None]]:
    return [(s.tool_name, s.tool_refused) for s in steps]


def test_each_seam_refusal_names_its_reason_and_a_call_that_ran_names_none() -> None:
    turn = [
        call("count", {"n": 1}),
        call("nope"),
        call("fussy"),
        call("count", "[1]"),
        call("broken"),
        call("count", {"n": 2}),
    ]
    steps = tool_steps([{"tool_calls": turn}, {"content": "ok"}], allowed_tools=["count", "broken"])
    assert reasons(steps) == [
        ("count", None),
        ("nope", "unknown_tool"),
        ("fussy", "not_permitted"),  # registered, but not offered to this run
        ("count", "not_an_object"),
        ("broken", None),  # it ran and failed: an error, not a refusal
        ("count", None),
    ]
    assert [s.tool_is_error for s in steps] == [False, True, True, True, True, False]


def test_a_tools_own_refusal_ran_so_it_is_no_runtime_refusal() -> None:
    (step,) = tool_steps([{"tool_calls": [call("fussy")]}, {"content": "ok"}])
    assert step.tool_is_error and step.tool_result == "Error: no, not today"
    assert step.tool_refused is None


def test_calls_past_the_per_turn_limit_are_refused_as_too_many() -> None:
    turn = [call("count", {"n": n}) for n in range(3)]
    steps = tool_steps([{"tool_calls": turn}, {"content": "ok"}], max_calls_per_turn=2)
    assert [s.tool_refused for s in steps] == [None, None, Refused.TOO_MANY_CALLS]


def test_a_denied_turn_refuses_each_call_as_denied() -> None:
    loop, result, _ = start(turns_with([call("read_row", {"n": 1}), call("write_row", {"n": 2})]))
    _, trace = resume(loop, paused(result), approved=False)
    assert reasons(trace.of_kind(ToolStep)) == [("read_row", "denied"), ("write_row", "denied")]


def test_a_resumed_turn_names_what_the_live_gate_and_the_pause_refused() -> None:
    reg = ToolRegistry([write_row, read_row, ask_city])
    turn = [call("write_row", {"n": 1}), call("ask_city", {"city": "Oslo"}), call("gone")]
    loop, result, _ = start(turns_with(turn), reg)
    reg.availability.set_tool("write_row", False)
    _, trace = resume(loop, paused(result), approved=True)
    assert reasons(trace.of_kind(ToolStep)) == [
        ("write_row", "no_longer_permitted"),
        ("ask_city", "input_missing"),
        ("gone", "unknown_tool"),
    ]


def test_a_refused_step_says_so_in_its_plain_form_and_others_do_not() -> None:
    turn = [call("nope"), call("count", {"n": 1})]
    refused, ran = tool_steps([{"tool_calls": turn}, {"content": "ok"}])
    assert refused.to_dict()["tool_refused"] == "unknown_tool"
    assert "tool_refused" not in ran.to_dict()
