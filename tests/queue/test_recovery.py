"""Workers that stop: a run carried on from its checkpoint, and one that keeps killing them."""

from __future__ import annotations

import time

from toolwire.core.lifecycle import stalled_too_often

from .kit import Queue, Worker, call, rounds


def test_a_worker_stopped_mid_run_hands_the_run_on_from_its_checkpoint(queue: Queue) -> None:
    first, second = queue.start(2, concurrency=1, grace=0.0)
    (run_id,) = queue.submit(queue.script(rounds(8, delay_ms=150)), max_rounds=10)
    holder = _holder(queue, run_id, (first, second), after_steps=7)
    assert holder.stop() == 0  # Ctrl-C: no time to finish, so the run is queued again
    (run,) = queue.wait([run_id])
    assert (run.status, run.rounds, run.stalls) == ("completed", 9, 0)
    stored = queue.store.get_run(run_id)
    assert stored is not None
    tools = [s["round"] for s in stored.steps if s["kind"] == "tool"]
    assert sorted(set(tools)) == list(range(1, 9))  # every round's read ran
    assert len(tools) <= 9  # from the checkpoint: at most the cut round's read ran twice
    assert [s["sequence"] for s in stored.steps] == list(range(1, len(stored.steps) + 1))


def test_a_run_whose_workers_keep_dying_fails_after_max_stalls(queue: Queue) -> None:
    queue.start(3, concurrency=2, recover=3.0, max_stalls=2)
    script = queue.script([{"tool_calls": [call("die")]}, {"content": "never"}])
    (run_id,) = queue.submit(script)
    (run,) = queue.wait([run_id], timeout=60)
    assert (run.status, run.error, run.stalls) == ("failed", stalled_too_often(2), 2)
    dead = [w for w in queue.workers if w.process.poll() is not None]
    assert len(dead) == 2  # each worker that took it died; the third failed it


def _holder(queue: Queue, run_id: str, workers: tuple[Worker, ...], *, after_steps: int) -> Worker:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        progress = queue.store.progress(run_id)
        if progress is not None and len(progress.steps) >= after_steps:
            owner = _owner(queue, run_id)
            return next(w for w in workers if w.pid == owner)
        time.sleep(0.02)
    raise AssertionError("the run did not progress")


def _owner(queue: Queue, run_id: str) -> int:
    from sqlalchemy import select

    from toolwire.store.schema import runs

    with queue.store.engine.connect() as connection:
        return int(connection.execute(select(runs.c.owner_pid).where(runs.c.id == run_id)).one()[0])
