"""A held call's answer in the store: handed over sealed, taken once, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import subprocess

from sqlalchemy import create_engine, update

from toolwire import RunRequest, ScriptedProvider, ToolContext, ToolRegistry, tool
from toolwire.core.lifecycle import RunStatus
from toolwire.core.messages import ToolCall
from toolwire.core.sealing import StateKey
from toolwire.runs.runtime import OperatorDecision, Runtime
from toolwire.store import schema
from toolwire.store.engine import resolve_url
from toolwire.store.runs import CALLER_GONE

from .conftest import Backend

KEY = StateKey(b"s" * 32)
CANARY = "held-answer-canary-93ab"


@tool(data_class="public", requires_approval=True)
def stamp() -> str:
    """Stamp the form."""
    return f"stamped {CANARY}"


def test_an_answer_is_kept_sealed_until_its_caller_takes_it_once(backend: Backend) -> None:
    caller = Runtime(ToolRegistry([stamp]), recorder=backend.open(), state_key=KEY)
    decider = Runtime(ToolRegistry([stamp]), recorder=backend.open(), state_key=KEY)

    async def scenario() -> str:
        held = await caller.call(ToolCall.of("c", "stamp", {}), context=ToolContext(),
                                 offered=frozenset({"stamp"}), hold=True)  # fmt: skip
        assert caller.recorder.take_answer(held.run_id) == (RunStatus.AWAITING_APPROVAL, None)
        digest = decider.pending(held.run_id).digest
        approve = OperatorDecision(action="approve", digest=digest, actor="op")
        await decider.resume(held.run_id, approve)
        return held.run_id

    run_id = asyncio.run(scenario())
    assert CANARY not in backend.raw_bytes().decode(errors="replace")  # sealed, metadata level
    status, sealed = caller.recorder.take_answer(run_id) or (None, None)
    assert status is RunStatus.COMPLETED and sealed is not None and sealed.startswith("tw1:")
    assert caller.recorder.take_answer(run_id) == (RunStatus.COMPLETED, None)
    assert caller.recorder.take_answer("no-such-run") is None
    assert caller.recorder.take_answer("not a run id!") is None


def test_a_held_call_whose_caller_died_is_interrupted_when_a_store_opens(backend: Backend) -> None:
    caller = Runtime(ToolRegistry([stamp]), recorder=backend.open(), state_key=KEY)
    model_run = Runtime(ToolRegistry([stamp]), recorder=backend.open(), state_key=KEY)

    async def hold() -> str:
        held = await caller.call(ToolCall.of("c", "stamp", {}), context=ToolContext(),
                                 offered=frozenset({"stamp"}), hold=True)  # fmt: skip
        return held.run_id

    held_id = asyncio.run(hold())
    waiting = model_run.run_sync(
        RunRequest.of("stamp it", provider=ScriptedProvider.from_turns(
            [{"tool_calls": [{"name": "stamp", "arguments": {}}]}]
        ))
    )  # fmt: skip
    assert waiting.status is RunStatus.AWAITING_APPROVAL
    gone = subprocess.Popen(["true"])  # a process that existed and is gone
    gone.wait()
    owner = {"owner_pid": gone.pid, "owner_started": "0"}
    engine = create_engine(resolve_url(backend.url))
    with engine.begin() as connection:
        connection.execute(update(schema.runs).values(**owner))
    engine.dispose()
    fresh = backend.open()
    held_run, model = fresh.get_run(held_id), fresh.get_run(waiting.run_id)
    assert held_run is not None
    assert (held_run.status, held_run.error) == ("interrupted", CALLER_GONE)
    assert model is not None and model.status == "awaiting_approval"  # any process may resume it
