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

from typing import NamedTuple

from sqlalchemy import BindParameter, Engine, String, bindparam, func, or_, select, update

from toolwire.core.binding import Binding, Sealer
from toolwire.core.errors import ConfigError
from toolwire.core.jsonenc import loads
from toolwire.core.lifecycle import WAITING, RunStatus
from toolwire.loop.run import DIRECT_CALL
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.recorder import Waiting
from toolwire.store import liveness, schema, seals
from toolwire.store.engine import errors
from toolwire.store.hotpath import Compiled, HotPath
from toolwire.store.interrupted import abandon, owner_of
from toolwire.store.rows import is_run_id, provider_ref
from toolwire.store.seals import VERSION
from toolwire.store.statements import BUMPED_VERSION, FAILED_CALLS, stored_totals

_runs, _steps = schema.runs, schema.steps
_ID: BindParameter[str] = bindparam("run_id", type_=String)
_RUNNING = _runs.c.status == RunStatus.RUNNING.value
_HELD = _runs.c.claim == bindparam("held_claim")
_LAST = select(func.max(_steps.c.sequence)).where(_steps.c.run_id == _ID).scalar_subquery()
# What a suspend reads of a running run (held under a claim, or not): its version, last step.
_SUSPENDING = select(VERSION, _LAST).where(_runs.c.id == _ID, _RUNNING)
_MODEL_CALLS = select(_steps.c.round, _steps.c.payload).where(
    _steps.c.run_id == _ID, _steps.c.kind == "llm"
)
_TOTALS = ("rounds", "prompt_tokens", "completion_tokens", "cost", "cost_complete")
# The move itself, guarded by the version read: of two racing writes one stores.
_SUSPEND = (
    update(_runs)
    .where(_runs.c.id == _ID, VERSION == bindparam("version"), _RUNNING)  # noqa: SIM300
    .values(
        status=bindparam("new_status"),
        suspended_state=bindparam("sealed"),
        seal_version=bindparam("new_version"),
        pending_digest=bindparam("digest"),
        checkpoint=None,
        claim=None,
        tool_errors=FAILED_CALLS,  # the stored-runs table shows what a waiting run has done
        **{name: bindparam(f"total_{name}") for name in _TOTALS},
    )
)


class _WaitingRow(NamedTuple):
    """What a decision reads of a waiting run, in the order ``_WAITING`` selects it."""

    status: str
    suspended_state: str | None
    pending_digest: str | None
    provider: str | None
    model: str | None
    base_url: str | None
    trust_zone: str | None
    script: str | None
    max_tokens_field: str | None
    queued: bool | None
    privacy_level: str | None
    seal_version: int | None
    owner_host: str | None
    owner_pid: int | None
    owner_started: str | None
    max_sequence: int | None


_WAITING = select(*(_runs.c[name] for name in _WaitingRow._fields[:-1]), _LAST).where(
    _runs.c.id == _ID, or_(*(_runs.c.status == status.value for status in WAITING))
)
_CLAIM = (
    update(_runs)
    .where(_runs.c.id == _ID, _runs.c.status == bindparam("from_status"),
           _runs.c.pending_digest == bindparam("digest"))
    .values(
        status=RunStatus.RUNNING.value,
        suspended_state=None,
        pending_digest=None,
        seal_version=BUMPED_VERSION,
        owner_host=bindparam("host"),
        owner_pid=bindparam("pid"),
        owner_started=bindparam("started"),
    )
)  # fmt: skip


class Waits:
    """Suspend, read and claim, on a store's hot path (see :mod:`toolwire.store.hotpath`):
    their statements compiled once for its dialect, as an approval round trip runs them."""

    def __init__(self, engine: Engine, hot: HotPath) -> None:
        dialect = engine.dialect
        self._engine, self._hot = engine, hot
        self._suspending = Compiled(_SUSPENDING, dialect)
        self._suspending_held = Compiled(_SUSPENDING.where(_HELD), dialect)
        self._model_calls = Compiled(_MODEL_CALLS, dialect)
        self._suspend = Compiled(_SUSPEND, dialect)
        self._suspend_held = Compiled(_SUSPEND.where(_HELD), dialect)
        self._waiting = Compiled(_WAITING, dialect)
        self._claim = Compiled(_CLAIM, dialect)

    def suspend(
        self, run_id: str, status: RunStatus, seal: Sealer, digest: str, *, claim: str | None
    ) -> bool:
        """Move a running run (held under ``claim``, if given) to waiting with the state
        ``seal`` seals for the run's next version and last stored step; False if it was not
        running, or a racing write won."""
        key = {"run_id": run_id, "held_claim": claim}
        held = claim is not None
        with errors(f"suspend run {run_id}"), self._hot.transaction() as tx:
            found = tx.first(self._suspending_held if held else self._suspending, key)
            if found is None:
                return False
            version, last = int(found[0]), int(found[1] or 0)
            sealed = seal(Binding(version=version + 1, sequence=last))
            calls = [(r, loads(p)) for r, p in tx.rows(self._model_calls, key)]
            totals = stored_totals(calls)
            values = key | {
                "version": version, "new_version": version + 1, "new_status": status.value,
                "sealed": sealed, "digest": digest,
                **{f"total_{name}": totals[name] for name in _TOTALS},
            }  # fmt: skip
            return tx.count(self._suspend_held if held else self._suspend, values) == 1

    def waiting(self, run_id: str) -> Waiting | None:
        """The run, with its sealed state, if it is waiting for a decision. A held call whose
        caller died is interrupted instead (see :mod:`toolwire.store.interrupted`)."""
        if not is_run_id(run_id):
            return None
        with errors(f"read run {run_id}"), self._hot.transaction() as tx:
            found = tx.first(self._waiting, {"run_id": run_id})
        row = None if found is None else _WaitingRow(*found)
        if row is None or row.suspended_state is None or row.pending_digest is None:
            return None
        decided: frozenset[str] = frozenset()
        if row.seal_version is None:  # sealed before versions (see toolwire.core.sealing)
            with errors(f"read run {run_id}"), self._engine.connect() as connection:
                decided = seals.decided(connection, run_id)
        if row.provider == DIRECT_CALL and liveness.is_dead(owner_of(row)):
            with errors(f"interrupt run {run_id}"), self._engine.begin() as connection:
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

    def claim(self, run_id: str, status: RunStatus, digest: str, owner: liveness.Owner) -> bool:
        """Atomically take a waiting run back to running, owned by ``owner``: of racing
        claims, one wins."""
        values = {"run_id": run_id, "from_status": status.value, "digest": digest,
                  "host": owner.host, "pid": owner.pid, "started": owner.started}  # fmt: skip
        with errors(f"claim run {run_id}"), self._hot.transaction() as tx:
            return tx.count(self._claim, values) == 1


def _level(value: str | None) -> PrivacyLevel:
    """A row's privacy level; the default for one that is not a level (never more content)."""
    try:
        return PrivacyLevel.parse(value or "")
    except ConfigError:
        return PrivacyLevel.METADATA


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
