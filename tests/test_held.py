"""Held calls: a direct call that needs a person waits in the store while its caller waits for
the answer; whoever decides runs it and hands the answer over (see ``toolwire.runs.held``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from toolwire import ToolContext, ToolRegistry, tool
from toolwire.core.errors import RunNotWaiting, StateUnreadable
from toolwire.core.lifecycle import RunStatus
from toolwire.core.messages import ToolCall
from toolwire.core.result import Artifact, ToolResult
from toolwire.core.sealing import StateKey
from toolwire.loop.seam import call_cancelled, denied, not_decided_in_time
from toolwire.policy.charter import CharterRefused
from toolwire.policy.options import RunOptions
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.held import ANSWER, CallAnswer, open_answer, seal_answer
from toolwire.runs.runtime import MemoryRecorder, OperatorDecision, RunRecorder, Runtime
from toolwire.store import RunStore
from toolwire.tools.api import User

from .store.resume_kit import run_columns

KEY = StateKey(b"k" * 32)
WRITES: list[str] = []
CANARY = "held-artifact-canary-5d1c"


@tool(data_class="content", effect="idempotent_write")
def jot(text: str, context: ToolContext) -> ToolResult:
    """Write a note."""
    who = context.user.name if context.user else "nobody"
    WRITES.append(f"{text} by {who}")
    return ToolResult.text(f"noted {text} for {who}", Artifact.text("note", CANARY))


@jot.previewer
def _(text: str, context: ToolContext) -> list[str]:
    return [f"will note: {text}"]


@tool(data_class="content")
def peek() -> str:
    """Read without writing."""
    return "peeked"


CALLER = ToolContext(user=User("host", is_admin=False))
ZONE = RunOptions(trust_zone="external_global")


@pytest.fixture(autouse=True)
def _no_writes() -> None:
    WRITES.clear()


def runtime(recorder: RunRecorder | None = None) -> Runtime:
    return Runtime(ToolRegistry([jot, peek]), recorder=recorder or MemoryRecorder(), state_key=KEY)


async def hold(rt: Runtime, name: str = "jot", text: str = "milk") -> str:
    arguments = {"text": text} if name == "jot" else {}
    outcome = await rt.call(ToolCall.of("c1", name, arguments), context=CALLER,
                            offered=frozenset({name}), options=ZONE, hold=True)  # fmt: skip
    assert outcome.status is RunStatus.AWAITING_APPROVAL
    return outcome.run_id


def decision(rt: Runtime, run_id: str, action: str = "approve") -> OperatorDecision:
    digest = rt.pending(run_id).digest
    return OperatorDecision(action=action, digest=digest, actor="op")  # type: ignore[arg-type]


def test_a_held_call_waits_runs_on_approval_and_its_caller_gets_the_content() -> None:
    async def scenario() -> tuple[CallAnswer, list[str]]:
        rt = runtime()
        run_id = await hold(rt)
        pause = rt.pending(run_id)
        assert [p.lines for p in pause.previews] == [("will note: milk",)]
        waiter = asyncio.ensure_future(rt.await_answer(run_id, "jot", decision_seconds=30))
        await asyncio.sleep(0.05)
        assert not waiter.done() and WRITES == []  # nothing ran before the decision
        resumed = await rt.resume(run_id, decision(rt, run_id))
        assert resumed.status is RunStatus.COMPLETED
        return await waiter, [s.kind for s in resumed.steps]

    answer, kinds = asyncio.run(scenario())
    assert answer == CallAnswer(content="noted milk for host", is_error=False)
    assert WRITES == ["milk by host"]
    assert kinds == ["decision", "tool"]


def test_a_decider_cannot_run_the_call_as_anyone_but_its_caller() -> None:
    async def scenario() -> CallAnswer:
        rt = runtime()
        run_id = await hold(rt)
        admin = ToolContext(user=User("root", is_admin=True))
        with pytest.raises(CharterRefused, match="cannot act for another"):
            await rt.resume(run_id, decision(rt, run_id), context=admin)
        assert rt.recorder.waiting(run_id) is not None  # refused before anything changed
        await rt.resume(run_id, decision(rt, run_id))
        return await rt.await_answer(run_id, "jot", decision_seconds=30)

    assert asyncio.run(scenario()).content == "noted milk for host"
    assert WRITES == ["milk by host"]


def test_a_denied_call_never_runs_and_its_caller_reads_the_seam_text() -> None:
    async def scenario() -> CallAnswer:
        rt = runtime()
        run_id = await hold(rt)
        await rt.resume(run_id, decision(rt, run_id, "deny"))
        return await rt.await_answer(run_id, "jot", decision_seconds=30)

    assert asyncio.run(scenario()) == CallAnswer(content=denied("jot"), is_error=True)
    assert WRITES == []


def test_an_undecided_call_times_out_is_cancelled_and_can_no_longer_be_approved() -> None:
    async def scenario() -> tuple[Runtime, str, CallAnswer]:
        rt = runtime()
        run_id = await hold(rt)
        return rt, run_id, await rt.await_answer(run_id, "jot", decision_seconds=0.2)

    rt, run_id, answer = asyncio.run(scenario())
    assert answer == CallAnswer(content=not_decided_in_time("jot", 0.2), is_error=True)
    assert "0.2 seconds" in answer.content
    with pytest.raises(RunNotWaiting):
        rt.pending(run_id)
    assert WRITES == []


def test_an_undecided_call_in_a_store_ends_with_its_refused_step_and_an_audit_row(
    tmp_path: Path,
) -> None:
    """The caller's timeout is the call's recorded end: a tool step with the text the caller
    read, refused as not decided, and its row in the governance log; the run is cancelled,
    its sealed state erased, and a late decision finds nothing to decide."""
    with RunStore.open(str(tmp_path / "runs.db"), privacy=PrivacyLevel.FULL) as store:
        rt = runtime(store)

        async def scenario() -> tuple[str, CallAnswer]:
            run_id = await hold(rt)
            return run_id, await rt.await_answer(run_id, "jot", decision_seconds=0.2)

        run_id, answer = asyncio.run(scenario())
        text = not_decided_in_time("jot", 0.2)
        assert answer == CallAnswer(content=text, is_error=True)
        stored = store.get_run(run_id)
        assert stored is not None
        assert (stored.status, stored.termination_reason) == ("cancelled", "cancelled")
        tool_steps = [s for s in stored.steps if s["kind"] == "tool"]
        assert [(s["tool_name"], s["tool_arguments"], s["tool_result"], s["tool_is_error"],
                 s["tool_refused"]) for s in tool_steps] == [
            ("jot", {"text": "milk"}, text, True, "not_decided")
        ]  # fmt: skip
        rows = store.list_gate_decisions(run_id=run_id)
        assert [(r.gate, r.reason, r.actor, r.tool) for r in rows] == [
            ("call", "not_decided", "runtime", "jot")
        ]
        assert run_columns(str(tmp_path / "runs.db"), run_id)["suspended_state"] is None
        with pytest.raises(RunNotWaiting):
            rt.pending(run_id)
    assert WRITES == []


def test_a_call_cancelled_while_it_waits_tells_its_caller() -> None:
    async def scenario() -> CallAnswer:
        rt = runtime()
        run_id = await hold(rt)
        waiter = asyncio.ensure_future(rt.await_answer(run_id, "jot", decision_seconds=30))
        await asyncio.sleep(0.05)
        assert rt.cancel_anywhere(run_id)
        return await waiter

    assert asyncio.run(scenario()) == CallAnswer(content=call_cancelled("jot"), is_error=True)
    assert WRITES == []


def test_a_call_that_needs_nobody_runs_at_once_even_when_it_may_be_held() -> None:
    async def scenario() -> RunStatus:
        rt = runtime()
        call = ToolCall.of("c1", "peek", {})
        outcome = await rt.call(call, context=CALLER, offered=frozenset({"peek"}), hold=True)
        return outcome.status

    assert asyncio.run(scenario()) is RunStatus.COMPLETED


def test_a_call_that_is_not_offered_is_refused_not_held() -> None:
    async def scenario() -> RunStatus:
        rt = runtime()
        call = ToolCall.of("c1", "jot", {"text": "x"})
        outcome = await rt.call(call, context=CALLER, offered=frozenset(), hold=True)
        return outcome.status

    assert asyncio.run(scenario()) is RunStatus.REFUSED
    assert WRITES == []


def test_held_calls_across_two_runtimes_sharing_a_store(tmp_path: Path) -> None:
    """The caller and the decider share only the store file and the key: the answer crosses
    sealed, is erased once taken, and the artifacts stay in the decider's recorded steps."""
    url = str(tmp_path / "runs.db")
    with (
        RunStore.open(url, privacy=PrivacyLevel.FULL) as caller_store,
        RunStore.open(url, privacy=PrivacyLevel.FULL) as decider_store,
    ):
        caller, decider = runtime(caller_store), runtime(decider_store)

        async def scenario() -> tuple[str, CallAnswer]:
            run_id = await hold(caller)
            waiter = asyncio.ensure_future(caller.await_answer(run_id, "jot",
                                                               decision_seconds=30))  # fmt: skip
            await asyncio.sleep(0.2)
            assert not waiter.done()
            await decider.resume(run_id, decision(decider, run_id))
            return run_id, await waiter

        run_id, answer = asyncio.run(scenario())
        assert answer == CallAnswer(content="noted milk for host", is_error=False)
        assert caller_store.take_answer(run_id) == (RunStatus.COMPLETED, None)  # taken once
        stored = caller_store.get_run(run_id)
        assert stored is not None and stored.status == "completed"
        row = run_columns(url, run_id)
        assert (row["provider"], row["trust_zone"], row["held_answer"]) == (
            "direct call", "external_global", None
        )  # fmt: skip
        tool_step = next(s for s in stored.steps if s["kind"] == "tool")
        assert tool_step["tool_artifacts"] == [
            {"type": "text", "label": "note", "data": {"text": CANARY}}
        ]
    assert WRITES == ["milk by host"]


def test_an_answer_is_sealed_for_its_run_and_its_purpose_only() -> None:
    answer = CallAnswer(content=CANARY, is_error=False)
    sealed = seal_answer(KEY, "run-a", answer)
    assert CANARY not in sealed
    assert open_answer(KEY, "run-a", sealed) == answer
    with pytest.raises(StateUnreadable):
        open_answer(KEY, "run-b", sealed)
    with pytest.raises(StateUnreadable):
        KEY.open("run-a", sealed)  # never a suspended state
    state = KEY.seal("run-a", '{"content": "x", "is_error": false}')
    with pytest.raises(StateUnreadable):
        KEY.open("run-a", state, purpose=ANSWER)


class Colour(BaseModel):
    colour: str


@tool(data_class="public", input_model=Colour)
def paint(colour: str = "none") -> str:
    """Paint the wall; a person picks the colour."""
    return f"painted {colour}"


def test_a_call_that_asks_for_input_waits_for_it_and_runs_with_it() -> None:
    async def scenario() -> CallAnswer:
        rt = Runtime(ToolRegistry([paint]), state_key=KEY)
        call = ToolCall.of("c1", "paint", {"colour": "grey"})
        held = await rt.call(call, context=CALLER, offered=frozenset({"paint"}), hold=True)
        assert held.status is RunStatus.AWAITING_INPUT
        pause = rt.pending(held.run_id)
        answer = OperatorDecision(action="input", digest=pause.digest, actor="op",
                                  values={"colour": "red"})  # fmt: skip
        await rt.resume(held.run_id, answer)
        return await rt.await_answer(held.run_id, "paint", decision_seconds=30)

    assert asyncio.run(scenario()) == CallAnswer(content="painted red", is_error=False)
