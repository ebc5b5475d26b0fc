"""Suspension and resume, at the loop and the runtime: reference §10.4's approval, input and
preview cases, adapted. Every tool appends to ``LOG`` when it runs, so "nothing ran" is exact."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from toolwire import ChatMessage, RunOptions, ScriptedProvider, ToolLoop, ToolRegistry, tool
from toolwire.core.errors import ConfigError, InvalidInput, RunNotWaiting, StaleDecision
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.loop.loop import LoopResult
from toolwire.loop.state import RunState
from toolwire.loop.suspension import NO_PREVIEW, bound_preview, more_lines, overlay
from toolwire.policy.trace import RequestStep, RunTrace
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime

from .fakes import call, only

LOG: list[str] = []


@pytest.fixture(autouse=True)
def _clear_log() -> Iterator[None]:
    LOG.clear()
    yield
    LOG.clear()


class CityInput(BaseModel):
    city: str


class NameInput(BaseModel):
    name: str


@tool(data_class="public", requires_approval=True)
def write_row(n: int) -> str:
    LOG.append(f"write {n}")
    return f"wrote {n}"


@tool(data_class="public")
def read_row(n: int) -> str:
    LOG.append(f"read {n}")
    return f"row {n}"


@tool(data_class="public", input_model=CityInput)
def ask_city(city: str, note: str = "") -> str:
    LOG.append(f"city {city} {note}")
    return f"weather in {city}"


@tool(data_class="public", input_model=NameInput)
def ask_name(name: str) -> str:
    LOG.append(f"name {name}")
    return f"hello {name}"


def registry() -> ToolRegistry:
    return ToolRegistry([write_row, read_row, ask_city, ask_name])


def turns_with(*turns: Sequence[dict[str, Any]], answer: str = "done") -> list[dict[str, Any]]:
    out = [{"tool_calls": list(t), "prompt_tokens": 10, "completion_tokens": 5} for t in turns]
    return [*out, {"content": answer, "prompt_tokens": 3, "completion_tokens": 2}]


def start(
    turns: list[dict[str, Any]], reg: ToolRegistry | None = None, **options: Any
) -> tuple[ToolLoop, LoopResult, RunTrace]:
    loop = ToolLoop(ScriptedProvider.from_turns(turns), reg or registry())
    trace = RunTrace()
    result = asyncio.run(
        loop.run([ChatMessage.user("hi")], options=RunOptions(**options), trace=trace, run_id="r1")
    )
    return loop, result, trace


def paused(result: LoopResult) -> RunState:
    assert result.reason == "suspended"
    assert result.suspended is not None and result.suspended.pause is not None
    return result.suspended


def resume(
    loop: ToolLoop, state: RunState, *, approved: bool = False, values: Any = None
) -> tuple[LoopResult, RunTrace]:
    trace = RunTrace()
    result = asyncio.run(
        loop.resume(state, approved=approved, values=values, trace=trace, run_id="r1")
    )
    return result, trace


def outputs(result: LoopResult) -> list[tuple[str, str, bool]]:
    return [(i.name, i.result, i.is_error) for i in result.trace]


MIXED = [call("read_row", {"n": 1}, "c1"), call("write_row", {"n": 2}, "c2"),
         call("read_row", {"n": 3}, "c3")]  # fmt: skip


# -- approval -------------------------------------------------------------------------------


def test_one_approval_call_among_ordinary_ones_pauses_the_whole_turn_unexecuted() -> None:
    _, result, trace = start(turns_with(MIXED))
    state = paused(result)
    assert LOG == []
    assert result.trace == () and result.iterations == 1
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (10, 5)
    assert [s.kind for s in trace.steps] == ["request", "llm"]
    assert state.pause is not None and state.pause.status is RunStatus.AWAITING_APPROVAL
    assert [(c.id, c.name, c.arguments) for c in state.pause.calls] == [
        ("c1", "read_row", '{"n":1}'),
        ("c2", "write_row", '{"n":2}'),
        ("c3", "read_row", '{"n":3}'),
    ]
    assert [m.role for m in state.messages] == ["user", "assistant"]


def test_an_approval_tool_that_is_not_offered_does_not_pause_and_is_refused() -> None:
    _, result, _ = start(turns_with(MIXED), allowed_tools=["read_row"])
    assert result.reason == "completed" and result.suspended is None
    assert LOG == ["read 1", "read 3"]
    assert outputs(result) == [
        ("read_row", "row 1", False),
        ("write_row", 'Error: tool "write_row" not permitted', True),
        ("read_row", "row 3", False),
    ]


def test_an_approved_resume_runs_the_pending_calls_in_order_and_totals_span_both() -> None:
    loop, result, _ = start(turns_with(MIXED))
    resumed, trace = resume(loop, paused(result), approved=True)
    assert LOG == ["read 1", "write 2", "read 3"]
    assert outputs(resumed) == [
        ("read_row", "row 1", False),
        ("write_row", "wrote 2", False),
        ("read_row", "row 3", False),
    ]
    assert [(s.kind, s.round) for s in trace.steps] == [
        ("tool", 1), ("tool", 1), ("tool", 1), ("request", 2), ("llm", 2),
    ]  # fmt: skip
    assert resumed.reason == "completed" and resumed.final_content == "done"
    assert resumed.iterations == 2
    assert (resumed.usage.prompt_tokens, resumed.usage.completion_tokens) == (13, 7)


def test_a_denied_turn_reads_the_denial_and_the_run_goes_on() -> None:
    loop, result, _ = start(turns_with(MIXED))
    resumed, _ = resume(loop, paused(result), approved=False)
    assert LOG == []
    denied = [(n, f'Error: tool "{n}" was denied by the operator.', True)
              for n in ("read_row", "write_row", "read_row")]  # fmt: skip
    assert outputs(resumed) == denied
    assert resumed.final_content == "done" and resumed.iterations == 2


def test_a_tool_disabled_while_the_run_waited_is_not_executed() -> None:
    reg = registry()
    loop, result, _ = start(turns_with([call("write_row", {"n": 7})]), reg)
    reg.availability.set_tool("write_row", False)
    resumed, _ = resume(loop, paused(result), approved=True)
    assert LOG == []
    assert outputs(resumed) == [
        ("write_row", 'Error: tool "write_row" is no longer permitted and was not executed.', True)
    ]
    assert resumed.final_content == "done" and resumed.iterations == 2


def test_the_no_tools_path_carries_the_counters_when_nothing_is_offered_any_more() -> None:
    reg = ToolRegistry([write_row])
    loop, result, _ = start(turns_with([call("write_row", {"n": 7})]), reg)
    reg.availability.set_tool("write_row", False)
    resumed, trace = resume(loop, paused(result), approved=True)
    assert resumed.iterations == 2 and resumed.final_content == "done"
    assert (resumed.usage.prompt_tokens, resumed.usage.completion_tokens) == (13, 7)
    assert trace.steps[-2].kind == "request" and trace.steps[-2].tool_specs == ()


def test_an_input_call_in_an_approval_resume_is_refused_as_missing_its_input() -> None:
    turn = [call("write_row", {"n": 1}), call("ask_city", {"city": "Paris"})]
    loop, result, _ = start(turns_with(turn))
    state = paused(result)
    assert state.pause is not None and state.pause.status is RunStatus.AWAITING_APPROVAL
    resumed, _ = resume(loop, state, approved=True)
    assert LOG == ["write 1"]
    assert outputs(resumed)[1] == (
        "ask_city",
        'Error: tool "ask_city" requires user input that was not provided.',
        True,
    )


@pytest.mark.parametrize("effect", ["idempotent_write", "non_idempotent_write"])
def test_a_write_effect_pauses_for_approval(effect: str) -> None:
    @tool(name="put", data_class="public", effect=effect)
    def put() -> str:
        LOG.append("put")
        return "put"

    _, result, _ = start(turns_with([call("put")]), ToolRegistry([put]))
    state = paused(result)
    assert state.pause is not None and state.pause.status is RunStatus.AWAITING_APPROVAL
    assert LOG == []


def test_a_read_only_effect_does_not_pause() -> None:
    @tool(name="peek", data_class="public", effect="read_only")
    def peek() -> str:
        LOG.append("peek")
        return "seen"

    _, result, _ = start(turns_with([call("peek")]), ToolRegistry([peek]))
    assert result.reason == "completed" and LOG == ["peek"]


def test_a_tool_cannot_both_need_approval_and_ask_for_input() -> None:
    with pytest.raises(ConfigError, match="cannot both need approval and ask for input"):

        @tool(data_class="public", requires_approval=True, input_model=CityInput)
        def both(city: str) -> str:
            return city

    with pytest.raises(ConfigError):

        @tool(data_class="public", effect="idempotent_write", input_model=CityInput)
        def also(city: str) -> str:
            return city


# -- input ----------------------------------------------------------------------------------


def test_an_input_pause_names_its_tool_and_schema() -> None:
    _, result, _ = start(turns_with([call("ask_city", {"city": "Paris"})]))
    pause = paused(result).pause
    assert pause is not None and pause.status is RunStatus.AWAITING_INPUT
    assert pause.input_tool == "ask_city"
    assert pause.input_schema == {
        "properties": {"city": {"title": "City", "type": "string"}},
        "required": ["city"],
        "type": "object",
    }
    assert LOG == []


def test_the_input_overlays_only_the_declared_keys() -> None:
    loop, result, _ = start(turns_with([call("ask_city", {"city": "Paris", "note": "keep"})]))
    resumed, _ = resume(loop, paused(result), values={"city": "Berlin", "evil": "x"})
    assert LOG == ["city Berlin keep"]
    (inv,) = resumed.trace
    assert inv.arguments == {"note": "keep", "city": "Berlin"}
    merged = overlay({"city": "Paris", "note": "keep"}, {"properties": {"city": {}}},
                     {"city": "Berlin", "evil": "x"})  # fmt: skip
    assert merged == {"note": "keep", "city": "Berlin"}


def test_a_second_input_tool_in_the_turn_is_refused() -> None:
    turn = [call("ask_city", {"city": "Paris"}), call("ask_name", {"name": "model"})]
    loop, result, _ = start(turns_with(turn))
    state = paused(result)
    assert state.pause is not None and state.pause.input_tool == "ask_city"
    resumed, _ = resume(loop, state, values={"city": "Berlin"})
    assert LOG == ["city Berlin "]
    assert outputs(resumed)[1] == (
        "ask_name",
        'Error: tool "ask_name" requires user input that was not provided.',
        True,
    )


def test_a_second_call_of_the_asking_tool_is_not_answered_by_the_same_input() -> None:
    turn = [call("ask_city", {"city": "Paris"}), call("ask_city", {"city": "Rome"})]
    loop, result, _ = start(turns_with(turn))
    resumed, _ = resume(loop, paused(result), values={"city": "Berlin"})
    assert LOG == ["city Berlin "]
    assert outputs(resumed) == [
        ("ask_city", "weather in Berlin", False),
        ("ask_city", 'Error: tool "ask_city" requires user input that was not provided.', True),
    ]


def test_an_approval_tool_in_an_input_resume_is_refused_as_missing_its_approval() -> None:
    @tool(name="flip", data_class="public")
    def flip_then() -> str:
        LOG.append("flip")
        return "flipped"

    @tool(name="flip", data_class="public", requires_approval=True)
    def flip_now() -> str:
        LOG.append("flip")
        return "flipped"

    turn = [call("ask_city", {"city": "Paris"}), call("flip")]
    _, result, _ = start(turns_with(turn), ToolRegistry([ask_city, flip_then]))
    provider = ScriptedProvider.from_turns(turns_with(turn))
    later = ToolLoop(provider, ToolRegistry([ask_city, flip_now]))
    resumed, _ = resume(later, paused(result), values={"city": "Berlin"})
    assert LOG == ["city Berlin "]
    assert outputs(resumed)[1] == (
        "flip",
        'Error: tool "flip" requires approval that was not given.',
        True,
    )


# -- counters over segments ------------------------------------------------------------------


def test_counters_accumulate_over_a_second_suspension() -> None:
    one = [call("write_row", {"n": 1})]
    loop, result, _ = start(turns_with(one, [call("write_row", {"n": 2})]))
    second = resume(loop, paused(result), approved=True)[0]
    state = paused(second)
    assert (state.rounds, state.usage.prompt_tokens, state.usage.completion_tokens) == (2, 20, 10)
    assert second.iterations == 2
    final, _ = resume(loop, state, approved=True)
    assert LOG == ["write 1", "write 2"]
    assert final.iterations == 3
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (23, 12)


def test_the_round_cap_counts_across_segments() -> None:
    turns = turns_with([call("write_row", {"n": 1})], answer="SYNTHESISED")
    loop, result, _ = start(turns, max_rounds=1)
    resumed, trace = resume(loop, paused(result), approved=True)
    assert LOG == ["write 1"]
    assert resumed.reason == "max_iterations" and resumed.truncated
    assert resumed.final_content == "SYNTHESISED" and resumed.iterations == 1
    assert [(s.kind, s.round) for s in trace.steps] == [("tool", 1), ("request", 2), ("llm", 2)]
    assert only(trace.steps[1], RequestStep).tool_choice == "none"


# -- previews -------------------------------------------------------------------------------


def previews_for(lines: Any) -> tuple[Any, ...]:
    @tool(name="edit", data_class="public", requires_approval=True)
    def edit(path: str) -> str:
        return "edited"

    @edit.previewer
    def show(path: str) -> Sequence[str]:
        if isinstance(lines, Exception):
            raise lines
        return lines  # type: ignore[no-any-return]

    _, result, _trace = start(turns_with([call("edit", {"path": "a.txt"})]), ToolRegistry([edit]))
    pause = paused(result).pause
    assert pause is not None
    return pause.previews


def test_a_tools_own_preview_is_shown() -> None:
    (preview,) = previews_for(["- old", "+ new"])
    assert (preview.index, preview.tool, preview.lines, preview.failed) == (
        0, "edit", ("- old", "+ new"), False
    )  # fmt: skip


def test_a_throwing_preview_is_one_failed_line_naming_the_class_not_the_message() -> None:
    (preview,) = previews_for(KeyError("secret-path-in-message"))
    assert preview.failed and len(preview.lines) == 1
    assert "KeyError" in preview.lines[0] and "secret-path" not in preview.lines[0]


def test_an_empty_preview_is_marked_failed() -> None:
    (preview,) = previews_for([])
    assert preview.failed and preview.lines == (NO_PREVIEW,)
    (blank,) = previews_for(["   ", "\t"])
    assert blank.failed and blank.lines == (NO_PREVIEW,)


def test_a_preview_of_one_string_is_split_and_one_of_none_fails_without_crashing() -> None:
    (text,) = previews_for("- old\n+ new")
    assert text.lines == ("- old", "+ new") and not text.failed
    (none,) = previews_for(None)
    assert none.failed and len(none.lines) == 1 and "TypeError" in none.lines[0]


def test_a_long_preview_is_bounded_to_a_screenful() -> None:
    (preview,) = previews_for(["y" * 600] * 25)
    assert len(preview.lines) == 21
    assert all(line == "y" * 499 + "…" for line in preview.lines[:20])
    assert preview.lines[20] == "… and 5 more line(s), not shown." == more_lines(5)


def test_preview_whitespace_is_kept_exactly_and_a_newline_starts_a_line() -> None:
    assert bound_preview(["  a \t b\n c  ", 42, "d\n", "\te\r"]) == (
        "  a \t b", " c  ", "d", "\te\u240d"
    )  # fmt: skip


def test_unsafe_characters_in_a_preview_get_visible_stand_ins() -> None:
    line = "a\x1b[31mb\x00\x7f\x85c\u202egnp.exe\u200b\ud800"
    assert bound_preview([line]) == (
        "a\u241b[31mb\u2400\u2421⟨U+0085⟩c⟨U+202E⟩gnp.exe⟨U+200B⟩\ufffd",
    )  # fmt: skip


def test_a_cut_line_never_outgrows_its_width_even_with_stand_ins() -> None:
    (line,) = bound_preview(["\u202e" * 600])
    assert len(line) == 500 and line.endswith("…") and line.startswith("⟨U+202E⟩")


def test_a_call_without_its_own_preview_shows_its_arguments() -> None:
    _, result, _ = start(turns_with([call("write_row", {"n": 5}), call("nope")]))
    pause = paused(result).pause
    assert pause is not None
    assert [(p.index, p.tool, p.lines) for p in pause.previews] == [
        (0, "write_row", ("write_row:", "n: 5"))
    ]


# -- the runtime ----------------------------------------------------------------------------


def runtime(reg: ToolRegistry | None = None) -> Runtime:
    return Runtime(reg or registry(), state_key=StateKey.generate())


def request(turns: list[dict[str, Any]]) -> RunRequest:
    return RunRequest.of("hi", provider=ScriptedProvider.from_turns(turns))


def decide(rt: Runtime, run_id: str, action: str, values: Mapping[str, Any] | None = None,
           digest: str | None = None) -> Any:  # fmt: skip
    pause = rt.pending(run_id)
    decision = OperatorDecision(action=action, digest=digest or pause.digest, actor="ops",  # type: ignore[arg-type]
                                reason="checked", values=values)  # fmt: skip
    provider = ScriptedProvider.from_turns(turns_with(MIXED))
    return rt.resume_sync(run_id, decision, provider=provider)


def test_the_runtime_suspends_then_resumes_with_a_recorded_decision() -> None:
    rt = runtime()
    outcome = rt.run_sync(request(turns_with(MIXED)))
    assert outcome.status is RunStatus.AWAITING_APPROVAL and LOG == []
    assert outcome.pause is not None and outcome.pause == rt.pending(outcome.run_id)
    done = decide(rt, outcome.run_id, "approve")
    assert done.status is RunStatus.COMPLETED and LOG == ["read 1", "write 2", "read 3"]
    decision = done.steps[0]
    assert (decision.kind, decision.round, decision.decision, decision.decided_by,
            decision.decision_reason, decision.turn_digest) == (
        "decision", 1, "approve", "ops", "checked", outcome.pause.digest)  # fmt: skip
    assert done.result.iterations == 2
    with pytest.raises(RunNotWaiting):
        decide(rt, outcome.run_id, "approve", digest=outcome.pause.digest)


def test_a_stale_digest_or_the_wrong_kind_of_decision_changes_nothing() -> None:
    rt = runtime()
    outcome = rt.run_sync(request(turns_with(MIXED)))
    with pytest.raises(StaleDecision):
        decide(rt, outcome.run_id, "approve", digest="0" * 32)
    with pytest.raises(RunNotWaiting, match="waits for approve or deny, not input"):
        decide(rt, outcome.run_id, "input", values={"city": "x"})
    assert LOG == [] and rt.pending(outcome.run_id) == outcome.pause


def test_invalid_input_raises_and_leaves_the_run_waiting() -> None:
    rt = runtime()
    outcome = rt.run_sync(request(turns_with([call("ask_city", {"city": "Paris"})])))
    assert outcome.status is RunStatus.AWAITING_INPUT
    with pytest.raises(InvalidInput, match="city: Input should be a valid string"):
        decide(rt, outcome.run_id, "input", values={"city": 42})
    with pytest.raises(InvalidInput, match="city: Field required"):
        decide(rt, outcome.run_id, "input", values={})
    assert LOG == [] and rt.pending(outcome.run_id) == outcome.pause
    done = decide(rt, outcome.run_id, "input", values={"city": "Berlin"})
    assert done.status is RunStatus.COMPLETED and LOG == ["city Berlin "]


def test_a_run_without_a_key_cannot_suspend_and_fails_clearly() -> None:
    rt = Runtime(registry())
    outcome = rt.run_sync(request(turns_with(MIXED)))
    assert outcome.status is RunStatus.FAILED and LOG == []
    assert outcome.error is not None
    assert outcome.error.startswith("the run could not be suspended: no state key: set ")
    assert outcome.pause is None


def test_a_waiting_run_cancelled_in_memory_cannot_be_resumed() -> None:
    rt = runtime()
    outcome = rt.run_sync(request(turns_with(MIXED)))
    pause = rt.pending(outcome.run_id)
    assert rt.cancel_anywhere(outcome.run_id)
    with pytest.raises(RunNotWaiting):
        decide(rt, outcome.run_id, "approve", digest=pause.digest)
    assert LOG == []


def test_the_runtime_denies_and_refuses_a_tool_disabled_while_waiting() -> None:
    rt = runtime()
    outcome = rt.run_sync(request(turns_with(MIXED)))
    denied = decide(rt, outcome.run_id, "deny")
    assert denied.status is RunStatus.COMPLETED and LOG == []
    assert [s.tool_result for s in denied.steps if s.kind == "tool"] == [
        f'Error: tool "{n}" was denied by the operator.'
        for n in ("read_row", "write_row", "read_row")
    ]
    outcome = rt.run_sync(request(turns_with(MIXED)))
    rt.registry.availability.set_tool("write_row", False)
    approved = decide(rt, outcome.run_id, "approve")
    assert LOG == ["read 1", "read 3"]
    assert [s.tool_result for s in approved.steps if s.kind == "tool"] == [
        "row 1",
        'Error: tool "write_row" is no longer permitted and was not executed.',
        "row 3",
    ]


def test_the_runtime_carries_counters_over_a_second_suspension() -> None:
    rt = runtime()
    turns = turns_with([call("write_row", {"n": 1})], [call("write_row", {"n": 2})])
    first = rt.run_sync(request(turns))
    provider = ScriptedProvider.from_turns(turns)

    def approve(outcome: Any) -> Any:
        decision = OperatorDecision(action="approve", digest=rt.pending(outcome.run_id).digest,
                                    actor="ops")  # fmt: skip
        return rt.resume_sync(outcome.run_id, decision, provider=provider)

    second = approve(first)
    assert second.status is RunStatus.AWAITING_APPROVAL and second.run_id == first.run_id
    assert first.pause is not None and second.pause is not None
    assert second.pause.digest != first.pause.digest
    assert second.result.iterations == 2
    done = approve(second)
    assert done.status is RunStatus.COMPLETED and LOG == ["write 1", "write 2"]
    assert done.result.iterations == 3
    assert (done.result.usage.prompt_tokens, done.result.usage.completion_tokens) == (23, 12)
