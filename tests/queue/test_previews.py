"""What an operator approves is what a queue worker runs: a value changed after its preview
makes the worker wait again on a fresh preview instead of writing, in another process."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from toolwire.core.errors import StaleDecision
from toolwire.core.lifecycle import RunStatus
from toolwire.loop.state import Pause
from toolwire.runs.runtime import OperatorDecision

from .kit import WAIT_TIMEOUT_S, Queue, call


def kv(queue: Queue, sql: str, **values: str) -> str | None:
    engine = create_engine(queue.url)
    try:
        with engine.begin() as connection:
            found = connection.execute(text(sql), values)
            return None if not found.returns_rows else found.scalar()
    finally:
        engine.dispose()


def test_a_worker_does_not_run_an_approved_write_whose_preview_no_longer_holds(
    queue: Queue,
) -> None:
    kv(queue, "INSERT INTO kv (key, value) VALUES ('colour', 'red')")
    queue.start(1)
    turns: list[dict[str, Any]] = [
        {"tool_calls": [call("set_value", key="colour", value="blue")]}, {"content": "set"}
    ]  # fmt: skip
    (run_id,) = queue.submit(queue.script(turns))
    (run,) = queue.wait([run_id])
    assert run.status == RunStatus.AWAITING_APPROVAL
    first = queue.runtime.pending(run_id)
    assert [p.lines for p in first.previews] == [("colour: red -> blue",)]
    kv(queue, "UPDATE kv SET value = 'green' WHERE key = 'colour'")  # another writer
    queue.approve(run_id)
    second = _waiting_again(queue, run_id, first.digest)
    assert [p.lines for p in second.previews] == [("colour: green -> blue",)]
    assert second.changed == (first.calls[0].id,)
    assert kv(queue, "SELECT value FROM kv WHERE key = 'colour'") == "green"
    assert queue.counts() == {}
    stale = OperatorDecision(action="approve", digest=first.digest, actor="test")
    with pytest.raises(StaleDecision):
        queue.runtime.check(run_id, stale)
    queue.approve(run_id)
    (run,) = queue.wait([run_id], done=lambda r: RunStatus(r.status).terminal)
    assert run.status == "completed"
    assert kv(queue, "SELECT value FROM kv WHERE key = 'colour'") == "blue"
    assert queue.counts() == {(run_id, "colour"): 1}


def _waiting_again(queue: Queue, run_id: str, digest: str) -> Pause:
    """The run's pause once a worker made it wait on a new turn digest."""
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    while time.monotonic() < deadline:
        (run,) = queue.runs([run_id])
        if run.status == RunStatus.AWAITING_APPROVAL:
            pause = queue.runtime.pending(run_id)
            if pause.digest != digest:
                return pause
        assert not RunStatus(run.status).terminal, run.status
        time.sleep(0.1)
    raise AssertionError("the run did not wait again")
