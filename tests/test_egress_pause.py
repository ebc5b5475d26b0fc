"""Egress limits that ask a person, at the loop: the pause holds the request before it is sent,
its sealed form reads back exactly (and nothing else does), approving raises the allowance by
one limit's worth past the approved request, a run nobody can be asked in stops, and code that
treats the pause as a turn of calls gets a clear error."""

from __future__ import annotations

import asyncio
import json

import pytest

from toolwire import RunOptions, ScriptedProvider, ToolLoop, ToolRegistry, tool
from toolwire.core.egress import RUN, WORKSPACE, Budget, Ceiling, EgressLimit, Granted, parse_window
from toolwire.core.errors import RunNotWaiting, StateUnreadable
from toolwire.core.lifecycle import RunStatus, TerminationReason
from toolwire.core.messages import ChatMessage
from toolwire.loop.state import RunState
from toolwire.loop.suspension import EGRESS_NOT_CALLS, plan
from toolwire.policy.trace import RunTrace

NOTE = "a note of thirty bytes, exactly"  # 31 bytes


@tool(data_class="content")
def read(name: str) -> str:
    """Read a note."""
    return NOTE


def scripted(reads: int) -> ScriptedProvider:
    turns = [{"tool_calls": [{"name": "read", "arguments": {"name": str(n)}}]}
             for n in range(reads)]  # fmt: skip
    return ScriptedProvider.from_turns([*turns, {"content": "done"}])


def loop_of(reads: int) -> ToolLoop:
    return ToolLoop(scripted(reads), ToolRegistry([read]))


ASKING = RunOptions(max_rounds=8, max_egress_bytes=len(NOTE), on_egress_limit="approve")
MESSAGES = [ChatMessage.user("read")]


def test_the_pause_holds_the_request_and_approving_sends_it() -> None:
    loop, trace = loop_of(2), RunTrace()
    paused = asyncio.run(loop.run(MESSAGES, options=ASKING, trace=trace))
    assert paused.reason is TerminationReason.SUSPENDED and paused.suspended is not None
    pause = paused.suspended.pause
    assert pause is not None and pause.status is RunStatus.AWAITING_APPROVAL
    assert pause.kind == "egress" and pause.egress is not None
    [crossed] = pause.egress.crossed
    assert (crossed.scope, crossed.limit, crossed.counted, crossed.request) == (
        RUN, len(NOTE), len(NOTE), 2 * len(NOTE),
    )  # fmt: skip
    assert [s.kind for s in trace.steps].count("llm") == 2  # the third request was not sent
    state = RunState.from_json(paused.suspended.to_json())
    done = asyncio.run(loop.resume(state, approved=True, trace=trace))
    assert done.reason is TerminationReason.COMPLETED and done.final_content == "done"
    assert [s.kind for s in trace.steps].count("llm") == 3


def test_denying_ends_the_run_with_nothing_sent() -> None:
    loop, trace = loop_of(2), RunTrace()
    paused = asyncio.run(loop.run(MESSAGES, options=ASKING, trace=trace))
    assert paused.suspended is not None
    ended = asyncio.run(loop.resume(paused.suspended, approved=False, trace=trace))
    assert ended.reason is TerminationReason.EGRESS_LIMIT and ended.truncated
    assert [s.kind for s in trace.steps].count("llm") == 2


def test_a_run_nobody_can_be_asked_in_stops() -> None:
    result = loop_of(2).run_sync(MESSAGES, options=ASKING)  # unattended
    assert result.reason is TerminationReason.EGRESS_LIMIT


def test_the_sealed_state_keeps_the_pause_and_the_grant() -> None:
    loop = loop_of(2)
    paused = asyncio.run(loop.run(MESSAGES, options=ASKING))
    assert paused.suspended is not None
    granted = paused.suspended._replace(egress_granted=Granted(run=7, workspace=9), invocations=())
    again = RunState.from_json(granted.to_json())
    assert again == granted and again.pause is not None and again.pause.egress is not None
    body = json.loads(granted.to_json())
    assert body["egress_granted"] == [7, 9]
    assert "egress_granted" not in json.loads(paused.suspended.to_json())  # nothing granted
    body["pause"]["egress"][1] = []  # an egress pause that names no limit
    with pytest.raises(StateUnreadable):
        RunState.from_json(json.dumps(body))
    body["pause"]["egress"][1] = [["elsewhere", 1, 1, 1]]
    with pytest.raises(StateUnreadable):
        RunState.from_json(json.dumps(body))


def test_code_that_reads_the_pause_as_a_turn_gets_a_clear_error() -> None:
    paused = asyncio.run(loop_of(2).run(MESSAGES, options=ASKING))
    assert paused.suspended is not None and paused.suspended.pause is not None
    pause = paused.suspended.pause
    assert (pause.calls, pause.previews) == ((), ())
    with pytest.raises(RunNotWaiting) as raised:
        plan(pause, ToolRegistry([read]), offered_then=frozenset(), offered_now=frozenset(),
             approved=True, values=None)  # fmt: skip
    assert str(raised.value) == EGRESS_NOT_CALLS


def test_approving_raises_each_crossed_limit_past_the_request_by_one_limits_worth() -> None:
    budget = Budget(ceilings=(Ceiling(RUN, 100, asks=True), Ceiling(WORKSPACE, 150, asks=True)))
    budget.seen(120)  # the workspace's other runs
    budget.spent = 20
    with pytest.raises(EgressLimit) as raised:
        budget.check(40)  # passes the workspace's (180 > 150), not the run's (60)
    over = raised.value
    assert over.asks and [c.scope for c in over.crossed] == [WORKSPACE]
    assert (over.spent, over.request, over.limit) == (140, 40, 150)
    granted = Granted().raised(over.crossed)
    assert granted == Granted(run=0, workspace=180)
    again = Budget(ceilings=(Ceiling(RUN, 100, 0, True), Ceiling(WORKSPACE, 150, 180, True)))
    again.seen(120)
    again.spent = 20
    again.check(40)  # the approved request goes
    again.spent += 40
    again.check(40)  # the run's own limit: 100 bytes
    with pytest.raises(EgressLimit) as next_one:
        again.check(41)
    assert [c.scope for c in next_one.value.crossed] == [RUN]


def test_a_limit_that_stops_wins_over_one_that_asks() -> None:
    budget = Budget(ceilings=(Ceiling(RUN, 10, asks=False), Ceiling(WORKSPACE, 10, asks=True)))
    with pytest.raises(EgressLimit) as raised:
        budget.check(11)
    assert not raised.value.asks and len(raised.value.crossed) == 2
    budget.check(0)  # no tool output: it goes whatever the budget


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("30m", 1800), ("24h", 86400),
                                                ("7d", 604800)])  # fmt: skip
def test_a_window_reads_as_its_seconds(text: str, seconds: float) -> None:
    assert parse_window(text) == seconds


@pytest.mark.parametrize("text", ["", "24", "h", "0h", "1.5h", "-1d", "1w", "367d"])
def test_a_bad_window_says_what_it_takes(text: str) -> None:
    with pytest.raises(ValueError, match="window"):
        parse_window(text)


def test_run_options_check_and_keep_what_passing_a_limit_does() -> None:
    with pytest.raises(ValueError, match="on_egress_limit must be 'stop' or 'approve'"):
        RunOptions(on_egress_limit="ask")
    kept = RunOptions.from_dict(ASKING.to_dict())
    assert (kept.on_egress_limit, kept.max_egress_bytes) == ("approve", len(NOTE))
    assert "on_egress_limit" not in RunOptions().to_dict()


def test_a_runtime_that_cannot_store_a_pause_stops_at_the_limit() -> None:
    from toolwire.runs.runtime import RunRequest, Runtime

    request = RunRequest.of("read", provider=scripted(2), options=ASKING)
    outcome = Runtime(ToolRegistry([read])).run_sync(request)  # no state key
    assert outcome.result is not None and outcome.result.reason is TerminationReason.EGRESS_LIMIT


def test_the_workspace_budget_is_read_again_before_every_request() -> None:
    from types import SimpleNamespace

    from toolwire.tools.api import ToolContext

    asked: list[float] = []
    others = iter([0, 0, 10_000])  # another run of the workspace sends meanwhile

    async def window(seconds: float) -> int:
        asked.append(seconds)
        return next(others)

    workspace = SimpleNamespace(max_workspace_bytes=1000, egress_window=3600.0)
    trace = RunTrace()
    trace.egress_others = window
    context = ToolContext(workspace=workspace)
    result = asyncio.run(loop_of(2).run(MESSAGES, options=RunOptions(max_rounds=8),
                                        context=context, trace=trace))  # fmt: skip
    assert result.reason is TerminationReason.EGRESS_LIMIT
    assert asked == [3600.0] * 3  # before each request: the third found the budget spent
    assert [s.kind for s in trace.steps].count("llm") == 2
