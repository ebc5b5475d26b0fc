"""Queued runs under their charter: a run queued at one privacy level and decided from a
process at another is kept at its own level by the worker that carries it on, whatever the
worker's or the decider's store says; a decider who may not decide for it changes nothing.
Real worker processes on a real PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from toolwire import RunOptions, ScriptedProvider
from toolwire.policy.charter import CharterRefused
from toolwire.policy.privacy import PrivacyLevel
from toolwire.queue import RunQueue
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.store import RunStore

from ..store.conftest import pg_dump
from .kit import Queue, call

CANARY = "queued-after-the-decision-4b9d"


def turns() -> list[dict[str, object]]:
    return [
        {"tool_calls": [call("count_write", key="w1")], "delay_ms": 10},
        {"content": CANARY, "delay_ms": 10},
    ]


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_a_queued_run_is_kept_at_its_own_level_whoever_decides_and_carries_it(
    queue: Queue, level: PrivacyLevel
) -> None:
    queue.start(1)
    provider = ScriptedProvider.from_file(queue.script(turns()))
    request = RunRequest.of("go", provider=provider, options=RunOptions(), privacy=level)
    run_id = queue.queue.submit(request)
    queue.wait([run_id])
    other = PrivacyLevel.METADATA if level.keeps_content else PrivacyLevel.FULL
    with RunStore.open(queue.url, privacy=other) as deciding:
        runtime = Runtime(queue.runtime.registry, recorder=deciding, state_key=queue.key)
        pause = runtime.pending(run_id)
        decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
        RunQueue(deciding, queue.key).decide(runtime.check(run_id, decision), decision)
    queue.wait([run_id], done=lambda r: r.status == "completed")
    stored = queue.store.get_run(run_id)
    assert stored is not None and stored.privacy_level == level.value
    kinds = [s["kind"] for s in stored.steps]
    assert kinds == ["request", "llm", "decision", "tool", "request", "llm"]
    assert ("content_withheld" in stored.steps[3]) is not level.keeps_content
    assert (CANARY.encode() in pg_dump(queue.url)) is level.keeps_content
    assert queue.counts() == {(run_id, "w1"): 1}


def test_an_operator_who_is_not_an_admin_cannot_queue_a_decision_on_another_users_run(
    queue: Queue,
) -> None:
    queue.start(1)
    provider = ScriptedProvider.from_file(queue.script(turns()))
    run_id = queue.queue.submit(RunRequest.of("go", provider=provider))
    queue.wait([run_id])
    runtime = queue.runtime
    pause = runtime.pending(run_id)
    bob = OperatorDecision(action="approve", digest=pause.digest, actor="bob", admin=False)
    with pytest.raises(CharterRefused, match="acts for someone else"):
        queue.queue.decide(runtime.check(run_id, bob), bob)
    engine = create_engine(queue.url)
    try:
        with engine.connect() as connection:
            status = connection.execute(
                text("SELECT status FROM runs WHERE id = :id"), {"id": run_id}
            ).scalar()
    finally:
        engine.dispose()
    assert status == "awaiting_approval" and queue.counts() == {}
