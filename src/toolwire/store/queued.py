"""Queued runs in the store: submitted, taken, checkpointed, decided, requeued, recovered.

The statements a queue (:mod:`toolwire.queue`) needs on top of :class:`RunStore`, on
PostgreSQL only (the queue refuses SQLite before anything here runs). Every transition is one
guarded UPDATE, and every one that needs a job adds it (``defer``, on the same connection) in
the same transaction, so a run is never queued without a job to carry it:

- ``submit``: a new run, ``queued``, with its sealed request (version 1, no step yet).
- ``take``: ``queued`` -> ``running`` under a fresh claim, by the job that carries it; with the
  run's seal version and last step, against which the worker checks what it opens (see
  :mod:`toolwire.core.latest`; ``marks_after`` reads the steps stored after a value's own).
- ``save_checkpoint``: the held run's progress, while it runs under its claim.
- ``decide``: a waiting queued run -> ``queued`` with the decision sealed as its checkpoint and
  the decision's step; of two racing decisions one moves the run, the other changes nothing.
- ``requeue``: a held run back to ``queued`` (its worker is shutting down).
- ``recover``: a run whose job's worker stopped -> ``queued`` again, one more stall counted; or
  ``failed`` once it has stalled ``max_stalls`` times. The stalled job is finished in the same
  transaction, so of two workers recovering it, one does.
- ``orphans``: queued or running runs with no live job (a worker that ended a job without
  settling its run); ``recover`` carries each on.

Every sealed value is sealed in the transaction that stores it, for the run's next version
(see :mod:`toolwire.store.seals`); ending a run raises the version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection, and_, insert, select, text, true, update

from toolwire.core.binding import Binding, Sealer
from toolwire.core.latest import StepMark
from toolwire.core.lifecycle import RunStatus, stalled_too_often
from toolwire.core.reprs import ident, size, tagged
from toolwire.loop.governance import decider_of
from toolwire.loop.run import RunRequest
from toolwire.policy.charter import ProviderRef
from toolwire.policy.privacy import PrivacyLevel, filter_run_step
from toolwire.policy.trace import RunStep
from toolwire.store import schema, seals
from toolwire.store.engine import errors
from toolwire.store.rows import now, provider_ref
from toolwire.store.runs import RunStore
from toolwire.store.statements import ERASED, recorded_totals

# Adds the job of a run on this connection (in a savepoint: when one already waits for the run,
# the engine's queueing lock refuses the second and nothing changes).
Defer = Callable[[Connection, str], None]
Recovery = Literal["requeued", "failed", "settled", "none"]
_runs, _workers = schema.runs, schema.queue_workers
_QUEUED, _RUNNING = RunStatus.QUEUED.value, RunStatus.RUNNING.value
_FINISH_JOB = text("SELECT procrastinate_finish_job_v1(:job, 'failed', false)")
_ORPHANS = text(
    "SELECT r.id FROM runs r WHERE r.queued AND r.status IN ('queued', 'running') AND "
    "NOT EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.lock = r.id "
    "AND j.status IN ('todo', 'doing'))"
)
_ORPHANED = text(
    "SELECT 1 FROM runs r WHERE r.id = :id AND "
    "NOT EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.lock = r.id "
    "AND j.status IN ('todo', 'doing'))"
)
_WORKERS = text(
    "SELECT w.id, w.last_heartbeat, EXTRACT(EPOCH FROM now() - w.last_heartbeat) AS age, "
    "q.host, q.pid, q.concurrency FROM procrastinate_workers w "
    "LEFT JOIN queue_workers q ON q.id = w.id ORDER BY w.id"
)
_HELD = text(
    "SELECT j.worker_id, r.id, r.status, (SELECT count(*) FROM steps s WHERE s.run_id = r.id) "
    "AS steps FROM procrastinate_jobs j JOIN runs r ON r.id = j.lock "
    "WHERE j.status = 'doing' AND j.worker_id IS NOT NULL ORDER BY r.created_at"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Taken:
    """A queued run a worker now holds: how to reach its provider, and its sealed progress."""

    run_id: str
    provider: ProviderRef
    privacy: PrivacyLevel
    request: str | None  # the sealed request (a fresh run starts from it)
    checkpoint: str | None  # the sealed checkpoint, once there is one
    stalls: int
    sequence: int  # the run's last stored step
    version: int | None = None  # the run's seal_version (None: never set)

    def __repr__(self) -> str:
        return tagged("Taken", run_id=ident(self.run_id), provider=ident(self.provider.name),
                      request_bytes=size(self.request), checkpoint_bytes=size(self.checkpoint),
                      stalls=self.stalls, sequence=self.sequence,
                      version=self.version)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerRow:
    """A live (or stalled) worker and the runs its jobs hold."""

    id: int
    host: str | None
    pid: int | None
    concurrency: int | None
    heartbeat_age: float  # seconds since its last heartbeat
    runs: tuple[tuple[str, str, int], ...]  # (run id, status, steps stored)


class QueuedRuns:
    """The queue's statements over ``store``'s database."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._engine = store.engine

    def submit(self, run_id: str, request: RunRequest, seal: Sealer, defer: Defer) -> None:
        """Store the new run, its request sealed by ``seal`` as the run's first value."""
        row = self.store.run_row(run_id, request, RunStatus.QUEUED)
        sealed = seal(Binding(version=1, sequence=0))
        row |= {"queued": True, "queued_request": sealed, "queued_at": now(), "stalls": 0,
                "seal_version": 1}  # fmt: skip
        with errors("queue a run"), self._engine.begin() as connection:
            connection.execute(insert(_runs).values(row))
            defer(connection, run_id)

    def take(self, run_id: str, claim: str, job_id: int) -> Taken | None:
        """Move the queued run to running under ``claim``; None when it is not queued."""
        owner = self.store.owner
        statement = (
            update(_runs)
            .where(_runs.c.id == run_id, _runs.c.status == _QUEUED)
            .values(status=_RUNNING, claim=claim, job_id=job_id, owner_host=owner.host,
                    owner_pid=owner.pid, owner_started=owner.started)
            .returning(*(_runs.c[name] for name in _TAKEN_COLUMNS))
        )  # fmt: skip
        with errors(f"take run {run_id}"), self._engine.begin() as connection:
            row = connection.execute(statement).first()
            if row is None:
                return None
            last = connection.execute(seals.last_sequence(run_id)).scalar()
        return Taken(
            run_id=run_id,
            provider=provider_ref(row),
            privacy=PrivacyLevel.parse(row.privacy_level),
            request=row.queued_request,
            checkpoint=row.checkpoint,
            stalls=int(row.stalls or 0),
            sequence=int(last or 0),
            version=row.seal_version,
        )

    def marks_after(self, run_id: str, sequence: int) -> list[StepMark]:
        """The run's steps stored after ``sequence``.

        See ``toolwire.core.latest.require_progress``.
        """
        with errors(f"read the steps of run {run_id}"), self._engine.connect() as connection:
            return seals.marks_after(connection, run_id, sequence)

    def save_checkpoint(self, run_id: str, claim: str, seal: Sealer) -> bool:
        """Keep the held run's progress, as ``seal`` seals it; False once the run is no longer
        running under ``claim`` (cancelled, or taken by another worker)."""
        held = (_runs.c.status == _RUNNING, _runs.c.claim == claim)
        with errors(f"checkpoint run {run_id}"), self._engine.begin() as connection:
            return seals.write(connection, run_id, seal, "checkpoint", *held)

    def decide(
        self,
        run_id: str,
        status: RunStatus,
        digest: str,
        *,
        seal: Sealer,
        step: RunStep,
        privacy: PrivacyLevel,
        defer: Defer,
    ) -> bool:
        """Queue the decided turn of a waiting queued run, recording ``step`` (the decision)
        at ``privacy``, the run's own level (its charter's); ``seal`` seals the decided turn,
        bound to that step."""
        waiting = (_runs.c.status == status.value, _runs.c.pending_digest == digest,
                   _runs.c.queued == true())  # fmt: skip
        values = {"status": _QUEUED, "queued_at": now(), "suspended_state": None,
                  "pending_digest": None}  # fmt: skip
        with errors(f"queue the decision on run {run_id}"), self._engine.begin() as connection:
            if not seals.write(connection, run_id, seal, "checkpoint", *waiting, values=values,
                               ahead=1):  # fmt: skip
                return False
            sequence = int(connection.execute(seals.last_sequence(run_id)).scalar() or 0) + 1
            kept = filter_run_step(step, privacy)
            step_row = self.store.step_row(run_id, sequence, step, kept, decider_of(kept))
            self.store.insert_step(connection, step_row)
            defer(connection, run_id)
        return True

    def requeue(self, run_id: str, claim: str, defer: Defer) -> bool:
        """Put the held run back in the queue (no stall: its worker is stopping cleanly)."""
        statement = (
            update(_runs)
            .where(_runs.c.id == run_id, _runs.c.status == _RUNNING, _runs.c.claim == claim)
            .values(status=_QUEUED, claim=None, queued_at=now())
        )
        with errors(f"requeue run {run_id}"), self._engine.begin() as connection:
            moved = connection.execute(statement).rowcount == 1
            if moved:
                defer(connection, run_id)
        return bool(moved)

    def recover(self, run_id: str, job_id: int | None, max_stalls: int, defer: Defer) -> Recovery:
        """Carry on a run whose job stopped: ``job_id`` (still ``doing``, its worker gone) is
        finished failed and the run queued again, one stall more; or, at ``max_stalls``, the
        run fails. Without a job (an orphan), the run is queued again the same way."""
        with errors(f"recover run {run_id}"), self._engine.begin() as connection:
            if job_id is not None:
                connection.execute(_FINISH_JOB, {"job": job_id})  # raises if already done
            row = connection.execute(
                select(_runs.c.status, _runs.c.stalls, _runs.c.settled, _runs.c.job_id)
                .where(_runs.c.id == run_id)
                .with_for_update()
            ).first()
            if row is None:
                return "none"
            if job_id is None and connection.execute(_ORPHANED, {"id": run_id}).first() is None:
                return "none"  # a job carries it again by now
            ours = job_id is None or row.job_id == job_id
            if row.status == _RUNNING and ours:
                stalls = int(row.stalls or 0) + 1
                if stalls >= max_stalls:
                    _fail(connection, run_id, stalls)
                    return "failed"
                _requeue(connection, run_id, stalls)
                defer(connection, run_id)
                return "requeued"
            if row.status == _QUEUED:
                defer(connection, run_id)
                return "requeued"
            if row.status == RunStatus.CANCELLED.value and not row.settled and ours:
                _settle_cancelled(connection, run_id)
                return "settled"
        return "none"

    def orphans(self) -> list[str]:
        """Queued or running queued runs that no job carries."""
        with errors("look for queued runs without a job"), self._engine.connect() as connection:
            return list(connection.execute(_ORPHANS).scalars())

    def register_worker(self, worker_id: int, concurrency: int) -> None:
        owner = self.store.owner
        row = {"id": worker_id, "host": owner.host, "pid": owner.pid,
               "concurrency": concurrency, "started_at": now()}  # fmt: skip
        with errors("register the worker"), self._engine.begin() as connection:
            connection.execute(insert(_workers).values(row))

    def workers(self) -> list[WorkerRow]:
        """Every worker the engine knows (live or stalled), with the runs it holds."""
        with errors("list the workers"), self._engine.connect() as connection:
            workers = connection.execute(_WORKERS).all()
            held = connection.execute(_HELD).all()
        runs: dict[int, list[tuple[str, str, int]]] = {}
        for row in held:
            runs.setdefault(int(row.worker_id), []).append((row.id, row.status, int(row.steps)))
        return [
            WorkerRow(id=int(w.id), host=w.host, pid=w.pid, concurrency=w.concurrency,
                      heartbeat_age=float(w.age), runs=tuple(runs.get(int(w.id), ())))
            for w in workers
        ]  # fmt: skip


_TAKEN_COLUMNS = (
    "provider", "model", "base_url", "trust_zone", "script", "max_tokens_field", "privacy_level",
    "queued_request", "checkpoint", "stalls", "seal_version",
)  # fmt: skip


def _requeue(connection: Connection, run_id: str, stalls: int) -> None:
    connection.execute(
        update(_runs)
        .where(_runs.c.id == run_id)
        .values(status=_QUEUED, claim=None, stalls=stalls, queued_at=now())
    )


def _fail(connection: Connection, run_id: str, stalls: int) -> None:
    values = {
        "status": RunStatus.FAILED.value, "settled": True, "stalls": stalls,
        "finished_at": now(), "error": stalled_too_often(stalls), "claim": None, **ERASED,
    }  # fmt: skip
    values |= recorded_totals(connection, run_id)
    connection.execute(update(_runs).where(_runs.c.id == run_id).values(values))


def _settle_cancelled(connection: Connection, run_id: str) -> None:
    """A running run cancelled while its worker was gone: settle it with what it recorded."""
    values = {"settled": True, "termination_reason": "cancelled", **ERASED}
    values |= recorded_totals(connection, run_id)
    cancelled = and_(_runs.c.id == run_id, _runs.c.status == RunStatus.CANCELLED.value)
    connection.execute(update(_runs).where(cancelled).values(values))
