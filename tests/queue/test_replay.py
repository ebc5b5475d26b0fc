"""A checkpoint put back after its run ended, as someone with write access to the runs table
(and no key) would: real workers refuse it, the run fails closed, and no write runs again."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from toolwire.core.lifecycle import RunStatus
from toolwire.queue import engine
from toolwire.store.schema import runs

from .kit import Queue, with_write

# The columns an attacker restores so that a worker takes the run again from its old
# checkpoint: the sealed value, the queue's flags, the claim, and the settle flag and ending a
# settle checks. ``seal_version`` is restored only where the test says so.
RESTORED = (
    "checkpoint", "status", "queued", "claim", "settled", "finished_at", "termination_reason",
    "error", "queued_request",
)  # fmt: skip
WRITE_AFTER = (
    "the run cannot start on this worker: the sealed state is not the run's latest: a write "
    "ran after it was sealed"
)
NEWER_VALUE = (
    "the run cannot start on this worker: the sealed state is not the run's latest: a later "
    "one was stored after it"
)


def test_an_approved_checkpoint_put_back_after_the_run_ended_runs_no_write_again(
    queue: Queue,
) -> None:
    (first,) = queue.start(1)
    rolled_back, kept = queue.submit(queue.script(with_write()), 2)
    queue.wait([rolled_back, kept])  # both wait for the approval of their write
    assert first.stop() == 0  # nobody takes a decided turn before its row is copied
    for run_id in (rolled_back, kept):
        queue.approve(run_id)
    decided = {run_id: _row(queue, run_id) for run_id in (rolled_back, kept)}
    assert decided[rolled_back]["status"] == "queued"
    assert decided[rolled_back]["checkpoint"].startswith("tw2:")
    queue.start(1)
    ended = queue.wait([rolled_back, kept], done=lambda r: RunStatus(r.status).terminal)
    assert [r.status for r in ended] == ["completed", "completed"]
    assert queue.counts() == {(rolled_back, "w1"): 1, (kept, "w1"): 1}
    steps = {run_id: _steps(queue, run_id) for run_id in (rolled_back, kept)}
    finished = _row(queue, rolled_back)
    assert (finished["checkpoint"], finished["queued_request"]) == (None, None)  # erased
    assert finished["seal_version"] > decided[rolled_back]["seal_version"]

    _put_back(queue, rolled_back, decided[rolled_back], with_version=True)
    _put_back(queue, kept, decided[kept], with_version=False)
    again = queue.wait([rolled_back, kept], done=lambda r: r.status == "failed")
    assert {r.id: r.error for r in again} == {rolled_back: WRITE_AFTER, kept: NEWER_VALUE}
    assert queue.counts() == {(rolled_back, "w1"): 1, (kept, "w1"): 1}  # no write ran again
    assert {run_id: _steps(queue, run_id) for run_id in (rolled_back, kept)} == steps
    failed = _row(queue, rolled_back)
    assert (failed["checkpoint"], failed["settled"]) == (None, True)  # erased again


def _put_back(queue: Queue, run_id: str, old: dict[str, Any], *, with_version: bool) -> None:
    """Restore the decided turn's columns and add a job for the run, as an orphan sweep would."""
    values = {name: old[name] for name in RESTORED}
    if with_version:
        values["seal_version"] = old["seal_version"]
    with queue.store.engine.begin() as connection:
        connection.execute(update(runs).where(runs.c.id == run_id).values(values))
        engine.defer(connection, run_id)


def _row(queue: Queue, run_id: str) -> dict[str, Any]:
    with queue.store.engine.connect() as connection:
        return dict(connection.execute(select(runs).where(runs.c.id == run_id)).one()._mapping)


def _steps(queue: Queue, run_id: str) -> list[tuple[str, int]]:
    stored = queue.store.get_run(run_id)
    assert stored is not None
    return [(s["kind"], s["round"]) for s in stored.steps]
