from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from toolwire import (
    Artifact,
    ChatMessage,
    Grant,
    RunOptions,
    RunStep,
    RunTrace,
    ScriptedProvider,
    TerminationReason,
    ToolContext,
    ToolLoop,
    ToolRegistry,
    ToolResult,
    User,
    tool,
)
from toolwire.core.bounding import TRUNCATION_MARKER
from toolwire.core.errors import RunCancelled, ScriptExhausted
from toolwire.policy.trace import RequestStep, ToolStep

from .fakes import RecordingProvider, call, only

CELL = "cell-canary-91c2"


@tool(group="records", data_class="public")
def lookup(key: str) -> ToolResult:
    """Look a key up."""
    return ToolResult.text(
        f"value of {key}", Artifact.table("rows", ["key", "secret"], [[key, CELL]])
    )


@tool(group="records", data_class="public")
def boom_tool() -> str:
    raise RuntimeError("postgresql://admin:hunter2@db/prod is down")


@tool(group="records", data_class="public")
def count(n: int) -> str:
    return str(n * 2)


@tool(group="records", data_class="public")
async def slow(ms: int = 1) -> str:
    await asyncio.sleep(ms / 1000)
    return "slept"


@tool(group="admin", requires_admin=True, data_class="public")
def admin_only() -> str:
    return "admin stuff"


@tool(group="records", enabled_by_default=False, data_class="public")
def disabled_tool() -> str:
    return "should not run"


def registry() -> ToolRegistry:
    return ToolRegistry([lookup, boom_tool, count, slow, admin_only, disabled_tool])


def run(
    turns: list[dict[str, Any]],
    *,
    options: RunOptions | None = None,
    context: ToolContext | None = None,
    reg: ToolRegistry | None = None,
) -> tuple[Any, RecordingProvider, RunTrace]:
    provider = RecordingProvider.of(turns)
    trace = RunTrace()
    loop = ToolLoop(provider, reg or registry())
    result = loop.run_sync([ChatMessage.user("hi")], options=options, context=context, trace=trace)
    return result, provider, trace


def test_no_tool_calls_returns_content() -> None:
    result, provider, trace = run([{"content": "plain answer"}])
    assert result.final_content == "plain answer"
    assert (result.iterations, result.truncated, result.reason) == (
        1,
        False,
        TerminationReason.COMPLETED,
    )
    assert result.trace == ()
    assert [s.kind for s in trace.steps] == ["request", "llm"]
    assert len(provider.requests) == 1


def test_one_tool_round() -> None:
    result, _provider, trace = run(
        [{"tool_calls": [call("lookup", {"key": "k1"})]}, {"content": "done"}]
    )
    assert result.final_content == "done"
    assert result.iterations == 2 and not result.truncated
    assert [inv.result for inv in result.trace] == ["value of k1"]
    assert [s.kind for s in trace.steps] == ["request", "llm", "tool", "request", "llm"]
    assert [s.round for s in trace.steps] == [1, 1, 1, 2, 2]


def test_artifacts_ride_the_trace_but_never_the_provider_wire() -> None:
    result, provider, trace = run(
        [{"tool_calls": [call("lookup", {"key": "k1"})]}, {"content": "done"}]
    )
    second = provider.requests[1]
    wire = repr([m.to_dict() for m in second.messages])
    assert "value of k1" in wire
    assert CELL not in wire
    assert result.trace[0].artifacts[0].data["rows"] == [["k1", CELL]]
    tool_step = only(trace.steps[2], ToolStep)
    assert tool_step.tool_artifacts is not None
    assert tool_step.tool_artifacts[0].data["rows"][0][1] == CELL


def test_assistant_turn_and_tool_turn_shape() -> None:
    _, provider, _ = run([{"tool_calls": [call("count", {"n": 2}, id="call_1")]}, {"content": "4"}])
    messages = [m.to_dict() for m in provider.requests[1].messages]
    assert messages == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_1", "name": "count", "arguments": '{"n":2}'}],
        },
        {"role": "tool", "content": "4", "tool_call_id": "call_1"},
    ]


def test_unknown_tool_is_an_error_and_the_loop_goes_on() -> None:
    result, _, _ = run([{"tool_calls": [call("nope")]}, {"content": "ok"}])
    (inv,) = result.trace
    assert inv.is_error and inv.result == 'Error: unknown tool "nope"'
    assert result.final_content == "ok"


def test_a_failing_tool_gives_the_fixed_text_and_logs_the_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="toolwire.seam"):
        result, provider, _ = run([{"tool_calls": [call("boom_tool")]}, {"content": "ok"}])
    (inv,) = result.trace
    assert inv.result == 'Error: tool "boom_tool" failed.'
    assert "hunter2" not in repr([m.to_dict() for m in provider.requests[1].messages])
    (record,) = [r for r in caplog.records if r.name == "toolwire.seam"]
    assert "boom_tool" in record.getMessage()
    assert record.exc_info is not None and "hunter2" in str(record.exc_info[1])


def test_tool_not_offered_is_refused_and_never_executed() -> None:
    executed: list[str] = []

    @tool(data_class="public")
    def spy() -> str:
        executed.append("ran")
        return "ran"

    reg = ToolRegistry([count, spy])
    result, provider, _ = run(
        [{"tool_calls": [call("spy")]}, {"content": "ok"}],
        options=RunOptions(allowed_tools=["count"]),
        reg=reg,
    )
    assert result.trace[0].result == 'Error: tool "spy" not permitted'
    assert executed == []
    assert [t.name for t in provider.requests[0].tools] == ["count"]


def test_bad_json_arguments_are_reported_to_the_model() -> None:
    result, _, trace = run([{"tool_calls": [call("count", "{not json")]}, {"content": "ok"}])
    (inv,) = result.trace
    assert inv.is_error
    assert inv.result == (
        'Error: arguments for tool "count" must be a JSON object; the text sent was not one.'
    )
    assert only(trace.steps[2], ToolStep).tool_arguments == "{not json"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, 'Error: invalid arguments for tool "count": n: Field required'),
        ({"n": "many"}, 'Error: invalid arguments for tool "count": n: Input should be a valid'),
        ({"n": 1, "x": 2}, 'Error: invalid arguments for tool "count": x: Extra inputs'),
    ],
)
def test_schema_violations_name_what_was_wrong(arguments: dict[str, Any], expected: str) -> None:
    result, _, _ = run([{"tool_calls": [call("count", arguments)]}, {"content": "ok"}])
    (inv,) = result.trace
    assert inv.is_error and inv.result.startswith(expected)


def test_list_arguments_are_not_an_object() -> None:
    result, _, _ = run([{"tool_calls": [call("count", "[1, 2]")]}, {"content": "ok"}])
    assert result.trace[0].is_error


def test_empty_argument_text_means_no_arguments() -> None:
    result, _, _ = run([{"tool_calls": [call("slow", "")]}, {"content": "ok"}])
    assert result.trace[0].result == "slept"


def test_huge_results_are_bounded_before_the_wire() -> None:
    @tool(data_class="public")
    def flood() -> str:
        return "z" * 200_000

    result, provider, trace = run(
        [{"tool_calls": [call("flood")]}, {"content": "ok"}], reg=ToolRegistry([flood])
    )
    sent = provider.requests[1].messages[-1].content
    assert len(sent.encode()) == 50_000 and sent.endswith(TRUNCATION_MARKER)
    assert only(trace.steps[2], ToolStep).tool_result_bytes == 200_000
    assert result.trace[0].result == sent


def test_error_results_from_tools_are_bounded_and_drop_artifacts() -> None:
    @tool(data_class="public")
    def fails_softly() -> ToolResult:
        return ToolResult.error("e" * 60_000 + "\udc80")

    result, _, _ = run(
        [{"tool_calls": [call("fails_softly")]}, {"content": "ok"}],
        reg=ToolRegistry([fails_softly]),
    )
    (inv,) = result.trace
    assert inv.is_error and inv.artifacts == ()
    assert len(inv.result.encode()) == 50_000


def test_a_tool_returning_something_else_fails() -> None:
    @tool(data_class="public")
    def weird() -> Any:
        return 42

    result, _, _ = run(
        [{"tool_calls": [call("weird")]}, {"content": "ok"}], reg=ToolRegistry([weird])
    )
    assert result.trace[0].result == 'Error: tool "weird" failed.'


def test_several_calls_in_one_turn_are_appended_in_call_order() -> None:
    _result, provider, _ = run(
        [
            {
                "tool_calls": [
                    call("slow", {"ms": 20}, id="a"),
                    call("count", {"n": 1}, id="b"),
                    call("count", {"n": 5}, id="c"),
                ]
            },
            {"content": "done"},
        ]
    )
    tool_turns = [m for m in provider.requests[1].messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_turns] == [
        ("a", "slept"),
        ("b", "2"),
        ("c", "10"),
    ]


def forever(n: int) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [call("count", {"n": i})], "prompt_tokens": 10, "completion_tokens": 5}
        for i in range(n)
    ]
    turns.append({"content": "SYNTHESISED", "prompt_tokens": 3, "completion_tokens": 2})
    return turns


def test_round_cap_ends_with_one_synthesis_in_which_no_tool_may_be_called() -> None:
    result, provider, trace = run(forever(2), options=RunOptions(max_rounds=2))
    assert result.final_content == "SYNTHESISED"
    assert (result.iterations, result.truncated, result.reason) == (
        2,
        True,
        TerminationReason.MAX_ITERATIONS,
    )
    assert len(result.trace) == 2
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (23, 12)
    assert result.usage.total_tokens == 35
    closing = [s for s in trace.steps if s.kind == "request" and s.tool_choice == "none"]
    offered = ("lookup", "boom_tool", "count", "slow")
    assert [(s.round, s.tool_specs) for s in closing] == [(3, offered)]
    assert trace.steps[-1].kind == "llm" and trace.steps[-1].round == 3
    # The tools are sent (an API may refuse tool calls in a history without definitions),
    # and none may be called.
    assert tuple(t.name for t in provider.requests[-1].tools) == offered
    assert provider.requests[-1].tool_choice == "none"
    assert {r.tool_choice for r in provider.requests[:-1]} == {"auto"}


def test_default_cap_is_five_rounds() -> None:
    result, _, _ = run(forever(5))
    assert (result.iterations, result.truncated, len(result.trace)) == (5, True, 5)


@pytest.mark.parametrize("rounds", [0, 1001, -1])
def test_rounds_outside_1_to_1000_are_refused(rounds: int) -> None:
    with pytest.raises(ValueError, match="between 1 and 1000"):
        RunOptions(max_rounds=rounds)


def test_five_hundred_rounds_are_allowed_with_the_synthesis_round_at_the_cap() -> None:
    result, provider, _ = run(forever(500), options=RunOptions(max_rounds=500))
    assert result.iterations == 500 and result.truncated
    assert result.reason == TerminationReason.MAX_ITERATIONS
    assert len(provider.requests) == 501 and provider.requests[-1].tool_choice == "none"


def test_no_tools_offered_is_one_plain_completion() -> None:
    result, provider, trace = run(
        [{"content": "plain", "tool_calls": [call("count", {"n": 1})]}],
        options=RunOptions(allowed_tools=[]),
    )
    assert len(provider.requests) == 1 and provider.requests[0].tools == ()
    assert (result.final_content, result.iterations, result.truncated) == ("plain", 1, False)
    assert result.trace == ()
    assert [(s.kind, s.round) for s in trace.steps] == [("request", 1), ("llm", 1)]
    assert only(trace.steps[0], RequestStep).tool_specs == ()


def test_disabled_tool_is_never_offered_even_when_requested() -> None:
    _, provider, trace = run(
        [{"content": "x"}], options=RunOptions(allowed_tools=["count", "disabled_tool"])
    )
    assert [t.name for t in provider.requests[0].tools] == ["count"]
    assert only(trace.steps[0], RequestStep).refusals == (
        {"tool": "disabled_tool", "reason": "disabled"},
    )


def test_none_means_the_enabled_set_not_every_registered_tool() -> None:
    _, provider, _ = run([{"content": "x"}])
    assert [t.name for t in provider.requests[0].tools] == ["lookup", "boom_tool", "count", "slow"]


def test_specs_come_in_registry_order() -> None:
    _, provider, _ = run([{"content": "x"}], options=RunOptions(allowed_tools=["slow", "lookup"]))
    assert [t.name for t in provider.requests[0].tools] == ["lookup", "slow"]


def test_admin_only_tools_reach_only_admins() -> None:
    turns: list[dict[str, Any]] = [{"tool_calls": [call("admin_only")]}, {"content": "ok"}]
    anonymous, provider, _ = run(turns)
    assert "admin_only" not in [t.name for t in provider.requests[0].tools]
    assert anonymous.trace[0].result == 'Error: tool "admin_only" not permitted'
    user, _, _ = run(turns, context=ToolContext(user=User("ann")))
    assert user.trace[0].is_error
    admin, provider, _ = run(turns, context=ToolContext(user=User("root", is_admin=True)))
    assert admin.trace[0].result == "admin stuff"


def test_group_grant_applies_inside_the_loop() -> None:
    result, provider, _ = run(
        [{"tool_calls": [call("count", {"n": 1})]}, {"content": "ok"}],
        options=RunOptions(grant=Grant.of(groups=["admin"])),
        context=ToolContext(user=User("root", is_admin=True)),
    )
    assert [t.name for t in provider.requests[0].tools] == ["admin_only"]
    assert result.trace[0].result == 'Error: tool "count" not permitted'


def test_request_step_is_recorded_before_the_provider_is_called() -> None:
    seen: list[str] = []

    class Watching(RecordingProvider):
        async def complete(self, request: Any) -> Any:
            seen.append(",".join(s.kind for s in trace.steps))
            return await super().complete(request)

    trace = RunTrace()
    provider = Watching.of([{"content": "x"}])
    ToolLoop(provider, registry()).run_sync([ChatMessage.user("q")], trace=trace)
    assert seen == ["request"]


def test_observers_see_each_step_in_order_as_recorded() -> None:
    seen: list[tuple[str, int]] = []
    trace = RunTrace(observers=[lambda s: seen.append((s.kind, len(trace.steps)))])
    provider = RecordingProvider.of([{"tool_calls": [call("count", {"n": 1})]}, {"content": "x"}])
    ToolLoop(provider, registry()).run_sync([ChatMessage.user("q")], trace=trace)
    assert seen == [("request", 1), ("llm", 2), ("tool", 3), ("request", 4), ("llm", 5)]


def test_an_observer_that_raises_stops_the_run() -> None:
    def cancel_on_tool(step: RunStep) -> None:
        if step.kind == "tool":
            raise RunCancelled("operator cancelled")

    trace = RunTrace(observers=[cancel_on_tool])
    provider = RecordingProvider.of(forever(5))
    with pytest.raises(RunCancelled):
        ToolLoop(provider, registry()).run_sync([ChatMessage.user("q")], trace=trace)
    assert len(provider.requests) == 1


def test_provider_errors_propagate() -> None:
    with pytest.raises(ScriptExhausted):
        run([{"tool_calls": [call("count", {"n": 1})]}])


def test_tool_context_reaches_the_tool() -> None:
    @tool(data_class="public")
    def whoami(context: ToolContext) -> str:
        return f"{context.user.name if context.user else 'nobody'} in {context.run_id}"

    result, provider, _ = run(
        [{"tool_calls": [call("whoami")]}, {"content": "ok"}],
        reg=ToolRegistry([whoami]),
        context=ToolContext(user=User("ann"), run_id="r1"),
    )
    assert result.trace[0].result == "ann in r1"
    assert "context" not in provider.requests[0].tools[0].parameters.get("properties", {})


def test_trust_zone_ceiling_gates_data_classes() -> None:
    @tool(group="system", data_class="system_diagnostics")
    def status() -> str:
        return "up"

    @tool(group="rag", data_class="public")
    def search() -> str:
        return "hits"

    @tool(group="mystery")
    def unclassified() -> str:
        return "?"

    reg = ToolRegistry([status, search, unclassified])
    for zone, offered in [
        ("local", ["status", "search", "unclassified"]),
        ("private_hosted", ["status", "search"]),
        ("external_eu", ["search"]),
        ("external_global", ["search"]),
    ]:
        _, provider, trace = run([{"content": "x"}], options=RunOptions(trust_zone=zone), reg=reg)
        assert [t.name for t in provider.requests[0].tools] == offered, zone
        refused = {r["tool"]: r["reason"] for r in only(trace.steps[0], RequestStep).refusals or ()}
        assert set(refused) == {"status", "search", "unclassified"} - set(offered)
        assert set(refused.values()) <= {"trust_zone"}


def test_a_turn_with_a_call_that_needs_approval_suspends_before_any_call_runs() -> None:
    executed: list[int] = []

    @tool(data_class="public", requires_approval=True)
    def write_row(n: int) -> str:
        executed.append(n)
        return "written"

    @tool(data_class="public")
    def read_row(n: int) -> str:
        executed.append(-n)
        return "read"

    turn = [call("read_row", {"n": 1}), call("write_row", {"n": 2}), call("read_row", {"n": 3})]
    result, provider, trace = run(
        [{"tool_calls": turn}, {"content": "ok"}], reg=ToolRegistry([write_row, read_row])
    )
    assert executed == []
    assert result.reason == "suspended" and result.trace == ()
    assert [s.kind for s in trace.steps] == ["request", "llm"]
    state = result.suspended
    assert state is not None and state.pause is not None
    assert [c.name for c in state.pause.calls] == ["read_row", "write_row", "read_row"]
    assert [m.role for m in state.messages] == ["user", "assistant"]
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    "text", ['{"n": NaN}', '{"n": Infinity}', '{"n": -Infinity}', '{"n":' * 100_000]
)
def test_arguments_that_are_not_strict_json_are_refused(text: str) -> None:
    result, _, trace = run([{"tool_calls": [call("count", text)]}, {"content": "ok"}])
    (inv,) = result.trace
    assert inv.is_error and "must be a JSON object" in inv.result
    assert only(trace.steps[2], ToolStep).tool_arguments == text


def sync_and_async_tools(seen: list[tuple[str, str]]) -> ToolRegistry:
    import threading

    @tool(data_class="public")
    def blocking() -> str:
        seen.append(("sync", threading.current_thread().name))
        return "sync"

    @tool(data_class="public")
    async def awaiting() -> str:
        seen.append(("async", threading.current_thread().name))
        return "async"

    return ToolRegistry([blocking, awaiting])


LOOP_THREAD = "MainThread"  # asyncio.run runs its loop on the calling thread
POOL = "toolwire-tool"  # the seam's own pool, kept across event loops


@pytest.mark.parametrize(
    ("names", "options", "beside", "exclusive", "where"),
    [
        (["blocking"], {}, False, None, [LOOP_THREAD]),  # the run has the loop to itself
        (["blocking", "blocking"], {"max_concurrency": 1}, False, None, [LOOP_THREAD] * 2),
        (["blocking", "blocking"], {}, False, None, [POOL] * 2),  # the two may overlap
        (["blocking"], {}, True, None, [POOL]),  # another task shares the loop
        (["blocking"], {}, False, False, [POOL]),  # the caller says it shares the loop
        (["awaiting", "awaiting"], {}, True, None, [LOOP_THREAD] * 2),  # always on the loop
    ],
)
def test_a_sync_tool_runs_on_the_loop_thread_only_where_it_can_stall_nothing(
    names: list[str],
    options: dict[str, Any],
    beside: bool,
    exclusive: bool | None,
    where: list[str],
) -> None:
    seen: list[tuple[str, str]] = []
    registry = sync_and_async_tools(seen)

    async def go() -> Any:
        loop = ToolLoop(RecordingProvider.of([{"tool_calls": [call(n) for n in names]},
                                              {"content": "ok"}]), registry)  # fmt: skip
        other = asyncio.ensure_future(asyncio.sleep(10)) if beside else None
        try:
            return await loop.run([ChatMessage.user("hi")], options=RunOptions(**options),
                                  exclusive=exclusive)  # fmt: skip
        finally:
            if other is not None:
                other.cancel()

    result = asyncio.run(go())
    answers = {"blocking": "sync", "awaiting": "async"}
    assert [i.result for i in result.trace] == [answers[n] for n in names]
    assert [thread if thread == LOOP_THREAD else thread[: len(POOL)] for _, thread in seen] == where


def test_run_sync_runs_a_sync_tool_on_its_own_loop_thread() -> None:
    seen: list[tuple[str, str]] = []
    loop = ToolLoop(RecordingProvider.of([{"tool_calls": [call("blocking")]}, {"content": "ok"}]),
                    sync_and_async_tools(seen))  # fmt: skip
    result = loop.run_sync([ChatMessage.user("hi")])
    assert result.trace[0].result == "sync" and seen == [("sync", LOOP_THREAD)]


def test_a_sync_tool_that_declares_it_does_not_block_runs_on_the_loop() -> None:
    import threading

    seen: list[int] = []

    @tool(data_class="public", blocking=False)
    def pure() -> str:
        seen.append(threading.get_ident())
        return "pure"

    async def go() -> Any:
        loop = ToolLoop(RecordingProvider.of([{"tool_calls": [call("pure")]}, {"content": "ok"}]),
                        ToolRegistry([pure]))  # fmt: skip
        return await loop.run([ChatMessage.user("hi")]), threading.get_ident()

    result, loop_thread = asyncio.run(go())
    assert result.trace[0].result == "pure" and seen == [loop_thread]


@pytest.mark.parametrize("by", ["tool", "group"])
def test_a_tool_disabled_while_the_run_goes_on_is_refused_when_its_call_arrives(by: str) -> None:
    ran: list[str] = []

    @tool(data_class="public", group="reports")
    def report() -> str:
        ran.append("report")
        return "report"

    registry = ToolRegistry([report])

    @tool(data_class="public", group="admin", concurrent=False)  # later calls wait for it
    def switch_off() -> str:
        if by == "tool":
            registry.availability.set_tool("report", False)
        else:
            registry.availability.set_group("reports", False)
        return "off"

    registry.register(switch_off)
    turns: list[dict[str, Any]] = [
        {"tool_calls": [call("report")]},
        {"tool_calls": [call("switch_off"), call("report")]},
        {"content": "done"},
    ]
    result, _, _ = run(turns, reg=registry)
    assert ran == ["report"]
    assert [i.result for i in result.trace] == [
        "report",
        "off",
        'Error: tool "report" not permitted',
    ]


def test_a_turn_past_the_per_turn_limit_runs_the_first_calls_and_refuses_the_rest() -> None:
    ran: list[int] = []

    @tool(data_class="public")
    def mark(n: int) -> str:
        ran.append(n)
        return str(n)

    turn: list[dict[str, Any]] = [{"tool_calls": [call("mark", {"n": n}) for n in range(33)]}]
    result, provider, _ = run([*turn, {"content": "done"}], reg=ToolRegistry([mark]))
    assert sorted(ran) == list(range(32))  # nothing past the limit executed (calls overlap)
    texts = [i.result for i in result.trace]
    refused = (
        "Error: a turn may make at most 32 tool calls; this call was past the limit and was "
        "not executed."
    )
    assert texts == [str(n) for n in range(32)] + [refused]
    tool_turns = [m for m in provider.requests[1].messages if m.role == "tool"]
    assert len(tool_turns) == 33  # every call has its answer, in the order asked


def test_the_per_turn_limit_is_a_setting() -> None:
    ran: list[int] = []

    @tool(data_class="public")
    def mark(n: int) -> str:
        ran.append(n)
        return str(n)

    turn: list[dict[str, Any]] = [{"tool_calls": [call("mark", {"n": n}) for n in range(3)]}]
    run([*turn, {"content": "done"}], reg=ToolRegistry([mark]),
        options=RunOptions(max_calls_per_turn=1))  # fmt: skip
    assert ran == [0]
    with pytest.raises(ValueError, match="max_calls_per_turn must be at least 1"):
        RunOptions(max_calls_per_turn=0)


def test_a_run_given_no_trace_ends_as_a_traced_run_does() -> None:
    # The loop records no step in the trace it makes for a run given none (nobody can read
    # it); the result must not depend on whether a trace is kept.
    @tool(data_class="public")
    def add(a: int, b: int) -> str:
        """Add."""
        return str(a + b)

    turns: list[dict[str, Any]] = [
        {"tool_calls": [call("add", {"a": 1, "b": n})]} for n in range(3)
    ]
    turns += [{"tool_calls": [call("add", {"a": 2, "b": 2}), call("nope")]}]
    turns += [{"content": "done", "prompt_tokens": 5, "completion_tokens": 2}]
    traced = RunTrace()
    results = [
        ToolLoop(ScriptedProvider.from_turns(turns), ToolRegistry([add])).run_sync(
            [ChatMessage.user("go")], trace=trace
        )
        for trace in (traced, None)
    ]
    kept, unkept = results
    assert (kept.final_content, kept.reason, kept.usage, kept.trace) == (
        unkept.final_content, unkept.reason, unkept.usage, unkept.trace,
    )  # fmt: skip
    assert [i.result for i in kept.trace] == ["1", "2", "3", "4", unkept.trace[-1].result]
    assert len(traced.of_kind(ToolStep)) == 5 and len(traced.of_kind(RequestStep)) == 5
