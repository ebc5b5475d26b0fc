"""Runs that wait for a person: suspended with their sealed state, read back, claimed to resume.

A running run moves to waiting once (``suspend``), with its state sealed for the run's next
version and its last stored step (see :mod:`toolwire.store.seals`) and the digest of its
pending turn; a held queued run moves only under its claim. Its row then shows what it has
done so far (rounds, tokens, cost, failed calls). Of racing claims to resume it, one wins
(``claim``); the claim erases the state and raises the version, so it never opens again. A
held call's answer is kept sealed for the caller waiting for it (``hand_over``) and erased as
it is taken (``take_answer``).
"""

from __future__ import annotations

from sqlalchemy import Engine, func, select, update

from toolwire.core.binding import Sealer
from toolwire.core.errors import ConfigError
from toolwire.core.lifecycle import WAITING, RunStatus, as_strings
from toolwire.loop.run import DIRECT_CALL
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.recorder import Waiting
from toolwire.store import liveness, schema, seals
from toolwire.store.engine import errors
from toolwire.store.interrupted import abandon, owner_of
from toolwire.store.rows import is_run_id, provider_ref
from toolwire.store.statements import BUMPED_VERSION, FAILED_CALLS, recorded_totals

_runs, _steps = schema.runs, schema.steps
_MAX_SEQUENCE = (
    select(func.max(_steps.c.sequence))
    .where(_steps.c.run_id == _runs.c.id)
    .scalar_subquery()
    .label("max_sequence")
)


def suspend(
    engine: Engine, run_id: str, status: RunStatus, seal: Sealer, digest: str, *, claim: str | None
) -> bool:
    """Move a running run (held under ``claim``, if given) to waiting with the state ``seal``
    seals; False if it was not running."""
    where = [_runs.c.status == RunStatus.RUNNING.value]
    if claim is not None:
        where.append(_runs.c.claim == claim)
    values = {"status": status.value, "pending_digest": digest, "checkpoint": None, "claim": None}
    with errors(f"suspend run {run_id}"), engine.begin() as connection:
        moved = seals.write(connection, run_id, seal, "suspended_state", *where, values=values)
        if moved:  # the stored-runs table shows what a waiting run has done so far
            connection.execute(
                update(_runs)
                .where(_runs.c.id == run_id)
                .values(**recorded_totals(connection, run_id), tool_errors=FAILED_CALLS)
            )
    return moved


def waiting(engine: Engine, run_id: str) -> Waiting | None:
    """The run, with its sealed state, if it is waiting for a decision. A held call whose
    caller died is interrupted instead (see :mod:`toolwire.store.interrupted`)."""
    if not is_run_id(run_id):
        return None
    query = select(_runs, _MAX_SEQUENCE).where(
        _runs.c.id == run_id, _runs.c.status.in_(as_strings(WAITING))
    )
    with errors(f"read run {run_id}"), engine.connect() as connection:
        row = connection.execute(query).first()
        legacy = row is not None and row.seal_version is None  # see toolwire.core.sealing
        decided = seals.decided(connection, run_id) if legacy else frozenset()
    if row is None or row.suspended_state is None or row.pending_digest is None:
        return None
    if row.provider == DIRECT_CALL and liveness.is_dead(owner_of(row)):
        with errors(f"interrupt run {run_id}"), engine.begin() as connection:
            abandon(connection, run_id)
        return None
    return Waiting(
        run_id=run_id,
        status=RunStatus(row.status),
        sealed=row.suspended_state,
        digest=row.pending_digest,
        provider=provider_ref(row),
        next_sequence=int(row.max_sequence or 0) + 1,
        queued=bool(row.queued),
        privacy=_level(row.privacy_level),
        version=row.seal_version,
        decided=decided,
    )


def _level(value: str | None) -> PrivacyLevel:
    """A row's privacy level; the default for one that is not a level (never more content)."""
    try:
        return PrivacyLevel.parse(value or "")
    except ConfigError:
        return PrivacyLevel.METADATA


def claim(
    engine: Engine, run_id: str, status: RunStatus, digest: str, owner: liveness.Owner
) -> bool:
    """Atomically take a waiting run back to running, owned by ``owner``: of racing claims,
    one wins."""
    statement = (
        update(_runs)
        .where(
            _runs.c.id == run_id,
            _runs.c.status == status.value,
            _runs.c.pending_digest == digest,
        )
        .values(
            status=RunStatus.RUNNING.value,
            suspended_state=None,
            pending_digest=None,
            seal_version=BUMPED_VERSION,
            owner_host=owner.host,
            owner_pid=owner.pid,
            owner_started=owner.started,
        )
    )
    with errors(f"claim run {run_id}"), engine.begin() as connection:
        return bool(connection.execute(statement).rowcount == 1)


def hand_over(engine: Engine, run_id: str, sealed: str) -> None:
    """Keep a held call's sealed answer for the caller waiting for it."""
    statement = update(_runs).where(_runs.c.id == run_id).values(held_answer=sealed)
    with errors(f"hand over the answer of run {run_id}"), engine.begin() as connection:
        connection.execute(statement)


def take_answer(engine: Engine, run_id: str) -> tuple[RunStatus, str | None] | None:
    """The run's status and, once it ended, its held answer, erased as it is taken.

    None when there is no such run."""
    if not is_run_id(run_id):
        return None
    query = select(_runs.c.status, _runs.c.held_answer).where(_runs.c.id == run_id)
    erase = update(_runs).where(_runs.c.id == run_id).values(held_answer=None)
    with errors(f"read the answer of run {run_id}"), engine.begin() as connection:
        row = connection.execute(query).first()
        if row is None:
            return None
        status = RunStatus(row.status)
        if not status.terminal:
            return status, None
        if row.held_answer is not None:
            connection.execute(erase)
        return status, row.held_answer
