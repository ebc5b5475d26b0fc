"""The queue's parts without worker processes: the sealed checkpoint, the write fence, the
pause an unknown write leads to, the store's guarded transitions, and following a run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from toolwire import ScriptedProvider, ToolRegistry, ToolResult, tool
from toolwire.core.errors import (
    DecisionError,
    QueueError,
    RunCancelled,
    StaleDecision,
    StateUnreadable,
)
from toolwire.core.lifecycle import RunStatus
from toolwire.core.messages import ChatMessage, ToolCall
from toolwire.core.sealing import CHECKPOINT, QUEUED_REQUEST, Binding, Sealer, StateKey, bound
from toolwire.loop.seam import Invoked
from toolwire.loop.state import CallPreview, Pause, Recorded, RunState
from toolwire.loop.turn import Job
from toolwire.policy.charter import ProviderRef, submit
from toolwire.policy.options import RunOptions
from toolwire.policy.privacy import PrivacyLevel
from toolwire.queue import RunQueue
from toolwire.queue.checkpoint import Checkpointer, Saved, open_saved
from toolwire.queue.engine import NOT_POSTGRES
from toolwire.queue.recovery import ALREADY_DONE, UNKNOWN_OUTCOME, waiting_again
from toolwire.queue.submit import NO_FILE, NO_KEY
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.store.queued import QueuedRuns
from toolwire.store.schema import runs
from toolwire.tools.api import ToolContext
from toolwire.workspace.config import Workspace

from ..store.conftest import pg_dump

KEY = StateKey.generate()
BOUND = Binding(version=3, sequence=7)
CANARY = "canary-queued-7d41"


@tool(data_class="public")
def look(q: str) -> str:
    """Look."""
    return q


@tool(data_class="public", effect="non_idempotent_write")
def send(to: str) -> str:
    """Send."""
    return to


REGISTRY = ToolRegistry([look, send])
CALLS = (ToolCall("c1", "look", '{"q": "a"}'), ToolCall("c2", "send", '{"to": "b"}'))


def paused_state() -> RunState:
    pause = Pause(
        status=RunStatus.AWAITING_APPROVAL,
        calls=CALLS,
        previews=(CallPreview(index=1, tool="send", lines=("send to b",)),),
        digest="d" * 32,
    )
    messages = (ChatMessage.user("go"), ChatMessage.assistant("", CALLS))
    charter = submit(provider=ProviderRef(name="scripted"), options=RunOptions(),
                     privacy=PrivacyLevel.METADATA, user=None, workspace=None)  # fmt: skip
    return RunState(messages=messages, rounds=1, pause=pause, offered=frozenset({"look", "send"}),
                    charter=charter)  # fmt: skip


def test_a_checkpoint_is_sealed_for_its_run_and_its_purpose() -> None:
    saved = Saved(state=paused_state(), action="approve", started=("c2",),
                  recorded=(Recorded("c1", "a", False),))  # fmt: skip
    sealed = KEY.seal("run-1", saved.to_json(), CHECKPOINT, binding=BOUND)
    assert bound(sealed) == BOUND and sealed.startswith("tw2:3:7:")
    opened = open_saved(KEY, "run-1", sealed, binding=BOUND)
    assert (opened.action, opened.started) == ("approve", ("c2",))
    assert opened.recorded == (Recorded("c1", "a", False),)
    assert opened.state.pause == saved.state.pause and opened.unknown == ("c2",)
    done = Saved(state=paused_state(), started=("c2",), recorded=(Recorded("c2", "b", True),))
    assert done.unknown == ()
    with pytest.raises(StateUnreadable):  # another run's, or the request's column
        open_saved(KEY, "run-2", sealed, binding=BOUND)
    with pytest.raises(StateUnreadable):
        KEY.open("run-1", sealed, QUEUED_REQUEST, binding=BOUND)
    for other in (Binding(version=2, sequence=7), Binding(version=3, sequence=6), None):
        with pytest.raises(StateUnreadable):  # another version or step than it was sealed for
            open_saved(KEY, "run-1", sealed, binding=other)
    with pytest.raises(StateUnreadable):
        Saved.from_json('{"version": 1, "state": "{}"}')


def test_a_write_is_marked_started_before_it_runs_and_its_result_kept_after() -> None:
    saved: list[Saved] = []
    ran: list[str] = []

    def save(seal: Sealer) -> bool:
        saved.append(open_saved(KEY, "run-1", seal(BOUND), binding=BOUND))
        return True

    def run(name: str) -> Callable[[], Awaitable[Invoked]]:
        async def go() -> Invoked:
            assert name != "send" or saved[-1].started == ("c2",)  # marked before it runs
            ran.append(name)
            return Invoked(ToolResult.text(f"{name} done"))

        return go

    base = Saved(state=paused_state(), action="approve")
    checkpoint = Checkpointer("run-1", key=KEY, save=save, registry=REGISTRY, saved=base)

    async def turn() -> None:
        await checkpoint.invoke(Job(CALLS[0], {"q": "a"}), run("look"))
        await checkpoint.invoke(Job(CALLS[1], {"to": "b"}), run("send"))
        again = await checkpoint.invoke(Job(CALLS[1], {"to": "b"}), run("send"))
        assert again.result.content == "send done"  # answered from the record
        await checkpoint.round_done(paused_state()._replace(pause=None, rounds=2))

    asyncio.run(turn())
    assert ran == ["look", "send"]  # the read is not fenced; the recorded write not run again
    assert [(s.action, s.started, s.recorded) for s in saved] == [
        ("approve", ("c2",), ()),
        ("approve", ("c2",), (Recorded("c2", "send done", False),)),
        (None, (), ()),
    ]
    assert saved[-1].state.rounds == 2 and saved[-1].state.pause is None


def test_a_checkpoint_the_store_refuses_stops_the_run_like_a_cancel() -> None:
    checkpoint = Checkpointer("run-1", key=KEY, save=lambda _: False, registry=REGISTRY)
    with pytest.raises(RunCancelled):
        asyncio.run(checkpoint.round_done(paused_state()))


def test_a_turn_with_an_unknown_write_waits_again_naming_it() -> None:
    saved = Saved(state=paused_state(), action="approve", started=("c2",),
                  recorded=(Recorded("c1", "a", False),))  # fmt: skip
    state = waiting_again("run-1", saved)
    pause = state.pause
    assert pause is not None and pause.status is RunStatus.AWAITING_APPROVAL
    assert (pause.rerun, pause.recorded, pause.calls) == (("c2",), saved.recorded, CALLS)
    assert pause.previews[0].lines == (*UNKNOWN_OUTCOME, "send to b")
    assert pause.digest != paused_state().pause.digest  # type: ignore[union-attr]
    done = waiting_again(
        "run-1",
        Saved(
            state=paused_state(),
            action="approve",
            started=("c2",),
            recorded=(Recorded("c2", "b", False),),
        ),
    )
    assert done.pause is not None and done.pause.previews[0].lines == (ALREADY_DONE,)
    assert RunState.from_json(state.to_json()).pause == pause  # sealed whole


def test_a_queue_needs_postgresql_and_a_key(tmp_path: Path, pg_schema: str) -> None:
    with RunStore.open(str(tmp_path / "runs.db")) as store, pytest.raises(QueueError) as sqlite:
        RunQueue(store, KEY)
    assert str(sqlite.value) == NOT_POSTGRES
    with RunStore.open(pg_schema) as store:
        with pytest.raises(QueueError) as no_key:
            RunQueue(store, None)
        assert str(no_key.value) == NO_KEY
        workspace = Workspace(files_root=tmp_path)  # built in code: no file to load it from
        request = RunRequest.of("x", provider=ScriptedProvider([]),
                                context=ToolContext(workspace=workspace))  # fmt: skip
        with pytest.raises(QueueError) as no_file:
            RunQueue(store, KEY).submit(request)
        assert str(no_file.value) == NO_FILE


def test_a_queued_request_is_sealed_at_rest_and_erased_when_the_run_ends(pg_schema: str) -> None:
    with RunStore.open(pg_schema) as store:
        request = RunRequest.of(f"find {CANARY}", provider=ScriptedProvider([]))
        run_id = RunQueue(store, KEY).submit(request)
        assert CANARY.encode() not in pg_dump(pg_schema)
        row = _row(store, run_id)
        assert (row.status, row.queued, row.stalls) == ("queued", True, 0)
        assert bound(row.queued_request) == Binding(version=1, sequence=0)
        first = Binding(version=1, sequence=0)
        state = RunState.from_json(KEY.open(run_id, row.queued_request, QUEUED_REQUEST,
                                            binding=first))  # fmt: skip
        assert state.messages[-1].content == f"find {CANARY}"
        with store.engine.connect() as connection:
            jobs = connection.execute(text("SELECT args, lock FROM procrastinate_jobs")).all()
        assert [tuple(job) for job in jobs] == [({"run_id": run_id}, run_id)]  # ids only
        assert store.request_cancel(run_id)  # a queued run is cancelled at once
        row = _row(store, run_id)
        assert (row.status, row.settled, row.queued_request) == ("cancelled", True, None)
        assert row.seal_version == 2  # raised as the request was erased


def test_a_held_run_writes_only_under_its_claim(pg_schema: str) -> None:
    with RunStore.open(pg_schema) as store:
        run_id = RunQueue(store, KEY).submit(RunRequest.of("x", provider=ScriptedProvider([])))
        queued = QueuedRuns(store)
        taken = queued.take(run_id, "a" * 32, job_id=1)
        assert taken is not None and taken.request is not None and taken.sequence == 0
        assert queued.take(run_id, "b" * 32, job_id=2) is None  # taken once
        bindings: list[Binding] = []

        def seal(binding: Binding) -> str:
            bindings.append(binding)
            return f"sealed {binding.version}"

        assert queued.save_checkpoint(run_id, "a" * 32, seal)
        assert not queued.save_checkpoint(run_id, "b" * 32, seal)
        store.hold(run_id, "b" * 32, store.privacy)  # a worker that lost the run
        assert not store.suspend(run_id, RunStatus.AWAITING_APPROVAL, seal, "d" * 32)
        row = _row(store, run_id)
        assert (row.status, row.checkpoint, row.seal_version) == ("running", "sealed 2", 2)
        assert bindings == [Binding(version=2, sequence=0)]  # the request was version 1


def test_a_decision_on_a_queued_run_is_taken_once(pg_schema: str) -> None:
    with RunStore.open(pg_schema) as store:
        run_id = RunQueue(store, KEY).submit(RunRequest.of("x", provider=ScriptedProvider([])))
        queued = QueuedRuns(store)
        queued.take(run_id, "a" * 32, job_id=1)
        store.hold(run_id, "a" * 32, store.privacy)
        state = paused_state()

        def seal(binding: Binding) -> str:
            return KEY.seal(run_id, state.to_json(), binding=binding)

        assert state.pause is not None
        assert store.suspend(run_id, RunStatus.AWAITING_APPROVAL, seal, state.pause.digest)
        store.release(run_id)
        runtime = Runtime(REGISTRY, recorder=store, state_key=KEY)
        decision = OperatorDecision(action="approve", digest="d" * 32, actor="ops")
        with pytest.raises(DecisionError, match="queue workers"):  # never resumed in-process
            runtime.resume_sync(run_id, decision)
        checked = runtime.check(run_id, decision)
        assert checked.waiting.queued
        RunQueue(store, KEY).decide(checked, decision)
        with pytest.raises(StaleDecision):
            RunQueue(store, KEY).decide(checked, decision)
        row = _row(store, run_id)
        assert (row.status, row.suspended_state, row.pending_digest) == ("queued", None, None)
        # submitted (1), suspended (2), decided (3): bound to the decision, its first step
        assert (row.seal_version, bound(row.checkpoint)) == (3, Binding(version=3, sequence=1))
        opened = open_saved(KEY, run_id, row.checkpoint, binding=bound(row.checkpoint))
        assert (opened.action, opened.state.pause) == ("approve", state.pause)
        stored = store.get_run(run_id)
        assert stored is not None
        assert [(s["kind"], s["decided_by"]) for s in stored.steps] == [("decision", "ops")]


def _row(store: RunStore, run_id: str) -> Any:
    with store.engine.connect() as connection:
        return connection.execute(select(runs).where(runs.c.id == run_id)).one()
