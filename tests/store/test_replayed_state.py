"""A waiting run's sealed state put back after the run went on, as someone who can write the
runs table (and has no key) would, on SQLite and PostgreSQL: the resume refuses it and nothing
changes, whether or not the run's seal version is rolled back too."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select, update

from toolwire import ScriptedProvider, ToolRegistry, tool
from toolwire.core.errors import StateNotLatest
from toolwire.core.latest import OLDER_VERSION, STEPS_AFTER
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.store.schema import runs

from .conftest import Backend

WRITES: list[int] = []
KEY = StateKey.generate()
TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "write_row", "arguments": {"n": 1}}]},
    {"content": "done"},
]
# What a waiting run's row holds that an attacker puts back to make it look waiting again.
RESTORED = (
    "suspended_state", "pending_digest", "status", "settled", "finished_at",
    "termination_reason", "final_answer", "final_answer_length",
)  # fmt: skip


@tool(data_class="public", requires_approval=True)
def write_row(n: int) -> str:
    WRITES.append(n)
    return f"wrote {n}"


def runtime(store: RunStore) -> Runtime:
    return Runtime(ToolRegistry([write_row]), recorder=store, state_key=KEY)


def row(store: RunStore, run_id: str) -> dict[str, Any]:
    with store.engine.connect() as connection:
        return dict(connection.execute(select(runs).where(runs.c.id == run_id)).one()._mapping)


@pytest.mark.parametrize(
    ("with_version", "message"),
    [(True, STEPS_AFTER), (False, OLDER_VERSION)],
    ids=["rolled-back", "kept"],
)
def test_a_state_put_back_after_its_resume_is_refused_and_changes_nothing(
    backend: Backend, with_version: bool, message: str
) -> None:
    WRITES.clear()
    store = backend.open()
    waiting = runtime(store).run_sync(
        RunRequest.of("go", provider=ScriptedProvider.from_turns(TURNS))
    )
    assert waiting.status is RunStatus.AWAITING_APPROVAL and waiting.pause is not None
    run_id, digest = waiting.run_id, waiting.pause.digest
    old = row(store, run_id)
    decision = OperatorDecision(action="approve", digest=digest, actor="ops")
    done = runtime(store).resume_sync(run_id, decision, provider=ScriptedProvider.from_turns(TURNS))
    assert done.status is RunStatus.COMPLETED and WRITES == [1]
    after = row(store, run_id)
    assert (after["suspended_state"], after["settled"]) == (None, True)
    assert after["seal_version"] > old["seal_version"]

    values = {name: old[name] for name in RESTORED}
    if with_version:
        values["seal_version"] = old["seal_version"]
    with store.engine.begin() as connection:
        connection.execute(update(runs).where(runs.c.id == run_id).values(values))
    replayed = row(store, run_id)
    steps = store.get_run(run_id).steps  # type: ignore[union-attr]
    with pytest.raises(StateNotLatest) as refused:
        runtime(store).resume_sync(run_id, decision, provider=ScriptedProvider.from_turns(TURNS))
    assert str(refused.value) == message
    assert WRITES == [1]  # the write did not run again
    assert row(store, run_id) == replayed  # nothing changed: not claimed, not settled
    assert store.get_run(run_id).steps == steps  # type: ignore[union-attr]
    with pytest.raises(StateNotLatest):  # nor can anyone read the pending turn from it
        runtime(store).pending(run_id)
