"""The per-run budget of remote calls: counted in the model's order, over rounds and segments."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

from toolwire import ChatMessage, RunOptions, ScriptedProvider, ToolLoop, ToolRegistry, tool
from toolwire.core.messages import ToolSpec
from toolwire.core.result import ToolResult
from toolwire.loop.seam import remote_budget_spent
from toolwire.loop.state import RunState
from toolwire.policy.options import DEFAULT_MAX_REMOTE_CALLS
from toolwire.tools.api import ToolContext, is_remote

from .fakes import call

RAN: list[str] = []


class FakeRemote:
    """A tool that says it is remote; later calls answer sooner than earlier ones."""

    group = "mcp:fake"
    enabled_by_default = True
    requires_admin = False
    requires_approval = False
    data_class = "public"
    remote = True
    concurrent = True
    is_async = True
    read_only = True  # and trusted: the run's containment holds none of its calls
    integrity = "trusted"

    def __init__(self, name: str) -> None:
        self.spec = ToolSpec(name=name, description="A remote tool.")

    async def execute(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.sleep(0.01 * (10 - int(arguments["n"])))  # the last asked finish first
        RAN.append(f"{self.spec.name} {arguments['n']}")
        return ToolResult.text(f"remote {arguments['n']}")


@tool(data_class="public")
def local(n: int) -> str:
    """A local tool."""
    RAN.append(f"local {n}")
    return f"local {n}"


@tool(data_class="public", requires_approval=True)
def guarded(n: int) -> str:
    """A tool that needs an operator's approval."""
    RAN.append(f"guarded {n}")
    return f"guarded {n}"


@pytest.fixture(autouse=True)
def _clean() -> None:
    RAN.clear()


def registry() -> ToolRegistry:
    return ToolRegistry([FakeRemote("fake__a"), FakeRemote("fake__b"), local, guarded])


def run(turns: list[list[dict[str, Any]]], **options: Any) -> Any:
    script = [{"tool_calls": t} for t in turns] + [{"content": "done"}]
    loop = ToolLoop(ScriptedProvider.from_turns(script), registry())
    return loop, asyncio.run(loop.run([ChatMessage.user("go")], options=RunOptions(**options)))


def answers(result: Any) -> list[tuple[str, str]]:
    return [(i.name, i.result) for i in result.trace]


def test_the_default_is_20_and_the_trait_is_read_from_the_tool() -> None:
    assert RunOptions().max_remote_calls == DEFAULT_MAX_REMOTE_CALLS == 20
    assert is_remote(FakeRemote("fake__a")) and not is_remote(local)
    with pytest.raises(ValueError, match="max_remote_calls"):
        RunOptions(max_remote_calls=-1)


def test_calls_past_the_budget_are_refused_in_the_order_asked_even_when_running_concurrently() -> (
    None
):
    first = [call("fake__a", {"n": n}) for n in range(4)] + [call("local", {"n": 9})]
    second = [call("fake__b", {"n": n}) for n in range(4, 7)]
    _, result = run([first, second], max_remote_calls=5)
    refused = remote_budget_spent(5)
    assert answers(result) == [
        *[("fake__a", f"remote {n}") for n in range(4)],
        ("local", "local 9"),  # a local call spends nothing
        ("fake__b", "remote 4"),
        ("fake__b", refused),
        ("fake__b", refused),
    ]
    assert sorted(RAN) == sorted([*(f"fake__a {n}" for n in range(4)), "local 9", "fake__b 4"])
    assert RAN[0] == "local 9" and RAN[1] == "fake__a 3"  # they did overlap, last first
    assert refused == (
        "Error: a run may make at most 5 calls to remote tools; this call was past the limit "
        "and was not executed."
    )
    assert result.reason == "completed"


def test_a_call_that_would_not_run_anyway_spends_nothing() -> None:
    turn = [call("fake__a", {"n": 1}), call("fake__b", "not json"), call("fake__a", {"n": 2})]
    _, result = run([turn], max_remote_calls=2, allowed_tools=["fake__a"])
    assert answers(result) == [
        ("fake__a", "remote 1"),
        ("fake__b", 'Error: tool "fake__b" not permitted'),
        ("fake__a", "remote 2"),
    ]


def test_a_budget_of_zero_runs_no_remote_call() -> None:
    _, result = run([[call("fake__a", {"n": 1}), call("local", {"n": 2})]], max_remote_calls=0)
    assert answers(result) == [("fake__a", remote_budget_spent(0)), ("local", "local 2")]
    assert RAN == ["local 2"]


def test_the_count_survives_a_pause_its_sealed_form_and_the_resume() -> None:
    before = [call("fake__a", {"n": 1}), call("fake__a", {"n": 2})]
    paused_turn = [call("guarded", {"n": 3}), call("fake__b", {"n": 4}), call("fake__b", {"n": 5})]
    loop, result = run([before, paused_turn], max_remote_calls=3)
    assert result.reason == "suspended"
    state = result.suspended
    assert state.remote_calls == 2
    reopened = RunState.from_json(state.to_json())
    assert reopened.remote_calls == 2 and reopened.options.max_remote_calls == 3
    resumed = asyncio.run(loop.resume(reopened, approved=True))
    assert answers(resumed) == [
        ("guarded", "guarded 3"),
        ("fake__b", "remote 4"),
        ("fake__b", remote_budget_spent(3)),
    ]


def test_a_state_written_before_the_budget_reads_with_the_defaults() -> None:
    state = json.loads(RunState(messages=(ChatMessage.user("q"),)).to_json())
    del state["remote_calls"]
    del state["options"]["max_remote_calls"]
    old = RunState.from_json(json.dumps(state))
    assert old.remote_calls == 0 and old.options.max_remote_calls == 20


def test_a_call_past_the_budget_carries_its_reason_for_the_governance_log() -> None:
    from toolwire.policy.trace import RunTrace, ToolStep

    trace = RunTrace()
    loop = ToolLoop(
        ScriptedProvider.from_turns(
            [{"tool_calls": [call("fake__a", {"n": 1}), call("local", {"n": 2})]},
             {"content": "done"}]
        ),
        registry(),
    )  # fmt: skip
    asyncio.run(loop.run([ChatMessage.user("go")], options=RunOptions(max_remote_calls=0),
                         trace=trace))  # fmt: skip
    steps = trace.of_kind(ToolStep)
    assert [(s.tool_name, s.tool_refused) for s in steps] == [
        ("fake__a", "remote_budget"), ("local", None)
    ]  # fmt: skip
