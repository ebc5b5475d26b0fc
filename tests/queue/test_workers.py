"""Runs executed by real worker processes on a real PostgreSQL: many runs across workers, a
cancel from another process, and a resume picked up by another worker."""

from __future__ import annotations

import time

from toolwire.core.lifecycle import RunStatus

from .kit import EXPECTED_THREE_TURNS, Queue, rounds, three_turns, with_write


def test_200_runs_across_4_workers_complete_with_their_steps_in_order(queue: Queue) -> None:
    workers = queue.start(4, concurrency=8)
    run_ids = queue.submit(queue.script(three_turns(delay_ms=20)), 200)
    found = queue.wait(run_ids)
    assert [r.status for r in found] == ["completed"] * 200
    for run_id in run_ids:
        stored = queue.store.get_run(run_id)
        assert stored is not None
        assert [s["sequence"] for s in stored.steps] == list(range(1, 9))
        assert [(s["kind"], s["round"]) for s in stored.steps] == EXPECTED_THREE_TURNS
        assert (stored.rounds, stored.stalls, stored.queued) == (3, 0, True)
    pids = {worker.pid for worker in workers}
    owners = _owners(queue, run_ids)
    assert owners <= pids and len(owners) >= 2  # spread over the workers


def test_a_run_executing_in_a_worker_is_cancelled_from_another_process(queue: Queue) -> None:
    queue.start(1)
    (run_id,) = queue.submit(queue.script(rounds(30, delay_ms=200)), max_rounds=40)
    queue.wait_for_steps(run_id, 4)
    assert queue.store.request_cancel(run_id)  # this process: not the worker's
    queue.wait([run_id], done=lambda r: r.termination_reason == "cancelled")  # its worker settled
    stored = queue.store.get_run(run_id)
    assert stored is not None
    seen = len(stored.steps)
    time.sleep(0.6)  # nothing more is recorded once the worker stopped it
    after = queue.store.get_run(run_id)
    assert after is not None and len(after.steps) == seen < 3 * 31
    assert (after.status, after.termination_reason) == ("cancelled", "cancelled")
    # the worker goes on with other runs
    (next_run,) = queue.submit(queue.script(three_turns(), "next"))
    assert [r.status for r in queue.wait([next_run])] == ["completed"]


def test_a_resume_after_approval_is_picked_up_by_another_worker(queue: Queue) -> None:
    (first,) = queue.start(1)
    (run_id,) = queue.submit(queue.script(with_write()))
    (run,) = queue.wait([run_id])
    assert run.status == RunStatus.AWAITING_APPROVAL
    assert first.stop() == 0  # the worker that suspended it is gone
    (second,) = queue.start(1)
    queue.approve(run_id)
    (run,) = queue.wait([run_id], done=lambda r: RunStatus(r.status).terminal)
    assert run.status == "completed"
    assert queue.counts() == {(run_id, "w1"): 1}
    stored = queue.store.get_run(run_id)
    assert stored is not None
    assert [(s["kind"], s["round"]) for s in stored.steps] == [
        ("request", 1), ("llm", 1), ("tool", 1), ("request", 2), ("llm", 2),
        ("decision", 2), ("tool", 2), ("request", 3), ("llm", 3),
    ]  # fmt: skip
    assert stored.steps[5]["decided_by"] == "test"
    assert _owners(queue, [run_id]) == {second.pid}
    assert first.pid != second.pid


def _owners(queue: Queue, run_ids: list[str]) -> set[int]:
    from sqlalchemy import select

    from toolwire.store.schema import runs

    with queue.store.engine.connect() as connection:
        query = select(runs.c.owner_pid).where(runs.c.id.in_(run_ids))
        return {int(pid) for pid in connection.execute(query).scalars()}
