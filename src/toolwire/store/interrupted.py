"""Runs whose process died: marked ``interrupted`` rather than left running or waiting forever.

A run left ``running`` by a process that died on this host can never settle itself (see
:mod:`toolwire.store.liveness` for when a process is provably dead); its rounds, tokens and
cost are then what its stored model calls say. A held call (a direct call waiting for a
person) whose caller died is interrupted too, its sealed state erased: nobody would get its
answer. A run whose process died waiting on a live question (see
:mod:`toolwire.store.questions`) is interrupted like a running one, and its questions are
deleted: nobody would carry the answer to the server. A queued run is never marked here: its
worker's heartbeats decide (see :mod:`toolwire.queue`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, and_, false, or_, select, update

from toolwire.core.lifecycle import WAITING, RunStatus, as_strings
from toolwire.loop.run import DIRECT_CALL
from toolwire.store import liveness, schema
from toolwire.store.engine import errors
from toolwire.store.questions import LIVE_QUESTION, drop_questions
from toolwire.store.rows import now
from toolwire.store.statements import BUMPED_VERSION, ERASED, FINISH_TOTALS, recorded_totals

INTERRUPTED_ERROR = "the process running this run stopped before the run finished"
CALLER_GONE = "the caller waiting for this call stopped before it was decided"
_runs = schema.runs


def mark_interrupted(engine: Engine, owner: liveness.Owner) -> int:
    """Mark the runs of dead processes on ``owner``'s host ``interrupted``; return how many."""
    running = or_(_runs.c.status == RunStatus.RUNNING.value, LIVE_QUESTION)
    held = and_(_runs.c.status.in_(as_strings(WAITING)), _runs.c.provider == DIRECT_CALL)
    query = select(
        _runs.c.id,
        _runs.c.status,
        _runs.c.owner_host,
        _runs.c.owner_pid,
        _runs.c.owner_started,
    ).where(
        or_(running, held),
        _runs.c.owner_host == owner.host,
        or_(_runs.c.queued.is_(None), _runs.c.queued == false()),  # see toolwire.queue
    )
    with errors("check for interrupted runs"), engine.begin() as connection:
        dead = [row for row in connection.execute(query) if liveness.is_dead(owner_of(row))]
        for row in dead:
            if row.status != RunStatus.RUNNING.value and not _asking(connection, row.id):
                abandon(connection, row.id)
                continue
            drop_questions(connection, row.id)
            connection.execute(
                update(_runs)
                .where(_runs.c.id == row.id, running)
                .values(
                    status=RunStatus.INTERRUPTED.value,
                    finished_at=now(),
                    error=INTERRUPTED_ERROR,
                    **ERASED,
                    **recorded_totals(connection, row.id),
                )
            )
            connection.execute(FINISH_TOTALS, {"run_id": row.id})
    return len(dead)


def _asking(connection: Connection, run_id: str) -> bool:
    """Whether ``run_id`` waits on a live question (it has no sealed state)."""
    query = select(_runs.c.id).where(_runs.c.id == run_id, LIVE_QUESTION)
    return connection.execute(query).first() is not None


def abandon(connection: Connection, run_id: str) -> None:
    """A held call whose caller died: interrupted, its sealed state erased, never decided."""
    connection.execute(
        update(_runs)
        .where(_runs.c.id == run_id, _runs.c.status.in_(as_strings(WAITING)))
        .values(
            status=RunStatus.INTERRUPTED.value,
            finished_at=now(),
            error=CALLER_GONE,
            settled=True,
            suspended_state=None,
            pending_digest=None,
            seal_version=BUMPED_VERSION,
        )
    )
    connection.execute(FINISH_TOTALS, {"run_id": run_id})


def owner_of(row: Any) -> liveness.Owner:
    """The process that owns a run, from its row."""
    return liveness.Owner(host=row.owner_host, pid=row.owner_pid or 0, started=row.owner_started)
