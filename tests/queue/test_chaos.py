"""Workers killed with SIGKILL while runs are in flight: no run is lost, no write repeats.

Each run reads, then writes (``count_write``: one row per execution, stored before the tool
sleeps, so a worker killed in that sleep has provably started the write), then answers. A
thread approves every write as it comes up, as an operator would. Two of four workers are
killed while writes are in flight; the other two carry their runs on.
"""

from __future__ import annotations

import threading
import time

from sqlalchemy import create_engine, text

from toolwire.core.errors import DecisionError
from toolwire.core.lifecycle import WRITE_NOT_REPEATED, RunStatus
from toolwire.queue.recovery import UNKNOWN_OUTCOME
from toolwire.store import RunSummary

from .kit import Queue, Worker, with_write

RUNS = 200


def test_two_of_four_workers_killed_lose_no_run_and_repeat_no_write(queue: Queue) -> None:
    workers = queue.start(4, concurrency=8, recover=6.0)
    run_ids = queue.submit(queue.script(with_write()), RUNS)
    approver = Approver(queue)
    approver.start()
    try:
        victims = _writing(queue, workers, started_at_least=40)
        for victim in victims:
            victim.kill()
        found = queue.wait(run_ids, done=approver.finished, timeout=150)
    finally:
        approver.stop()
    counts = queue.counts()
    assert max(counts.values()) == 1  # no write ran twice for one call
    statuses = {run.id: run.status for run in found}
    assert len(statuses) == RUNS  # none lost, none left queued or running
    completed = [r for r in found if r.status == "completed"]
    waiting = [r for r in found if r.status == "awaiting_approval"]
    assert len(completed) + len(waiting) == RUNS, {s for s in statuses.values()}
    assert all(counts.get((r.id, "w1")) == 1 for r in completed)  # each wrote exactly once
    recovered = [r for r in found if r.stalls > 0]
    assert recovered and all(r.stalls == 1 for r in recovered)
    # Each killed worker was inside a write: those runs wait for an operator, naming it. (A
    # worker killed between marking a write started and the write itself wrote nothing.)
    assert len([r for r in waiting if counts.get((r.id, "w1")) == 1]) >= 2
    for run in waiting:
        pause = queue.runtime.pending(run.id)
        assert pause.rerun == ("call_2_1",) and counts.get((run.id, "w1"), 0) <= 1
        assert pause.previews[0].lines[:2] == UNKNOWN_OUTCOME
    _deny_one_and_rerun_another(queue, waiting)


def _deny_one_and_rerun_another(queue: Queue, waiting: list[RunSummary]) -> None:
    """An operator decides: deny fails the run; approve runs the write again, once."""
    queue.deny(waiting[0].id)
    (denied,) = queue.wait([waiting[0].id], done=lambda r: RunStatus(r.status).terminal)
    assert (denied.status, denied.error) == ("failed", WRITE_NOT_REPEATED)
    again = waiting[1].id
    before = queue.counts().get((again, "w1"), 0)
    queue.approve(again)
    (run,) = queue.wait([again], done=lambda r: RunStatus(r.status).terminal)
    assert run.status == "completed" and queue.counts()[(again, "w1")] == before + 1


class Approver(threading.Thread):
    """Approves every ordinary pending write; leaves a write of unknown outcome waiting."""

    def __init__(self, queue: Queue) -> None:
        super().__init__(daemon=True)
        self.queue = queue
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(0.1):
            for run in self.queue.store.list_runs(waiting=True, limit=1000):
                try:
                    if not self.queue.runtime.pending(run.id).rerun:
                        self.queue.approve(run.id)
                except DecisionError:  # it moved on meanwhile
                    pass

    def finished(self, run: RunSummary) -> bool:
        """A run is done once it ended, or waits on a write of unknown outcome."""
        if RunStatus(run.status).terminal:
            return True
        try:
            return run.status == "awaiting_approval" and bool(
                self.queue.runtime.pending(run.id).rerun
            )
        except DecisionError:  # approved meanwhile
            return False

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=10)


def _writing(queue: Queue, workers: list[Worker], *, started_at_least: int) -> list[Worker]:
    """Two workers each inside a write right now, once ``started_at_least`` writes began."""
    engine = create_engine(queue.url)
    by_pid = {worker.pid: worker for worker in workers}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with engine.connect() as connection:
                started = connection.execute(text("SELECT count(*) FROM write_counts")).scalar()
                busy = connection.execute(
                    text("SELECT DISTINCT pid FROM write_counts "
                         "WHERE at > clock_timestamp() - interval '100 milliseconds'")
                ).scalars().all()  # fmt: skip
            victims = [by_pid[pid] for pid in busy if pid in by_pid]
            if (started or 0) >= started_at_least and len(victims) >= 2:
                return victims[:2]
            time.sleep(0.02)
    finally:
        engine.dispose()
    raise AssertionError("no two workers were writing at once")
