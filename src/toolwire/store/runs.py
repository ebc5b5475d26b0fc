"""The audit store: every run and its steps, privacy-filtered, in SQLite or PostgreSQL.

``RunStore`` implements :class:`toolwire.runtime.RunRecorder` (begin, record_step, settle,
cancel_requested) and the reading side the inspector and the command line use.

Invariants:
- A step is filtered at the store's privacy level before it is encoded; nothing unfiltered is
  ever written. The run's final answer follows the same level.
- Sequence numbers are unique per run (the table key) and increasing (checked per run here).
- A run settles once: the first settle wins and later ones return False. A cancel that won
  (``request_cancel`` on a running run) keeps the run ``cancelled`` whatever the settle says.
- A run whose owning process died on this host is marked ``interrupted`` when a store opens
  (see :mod:`toolwire.store.liveness`).
- Every failure is a :class:`toolwire.errors.StoreError`; the runtime keeps a run going
  without its store when one is raised.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, case, delete, false, func, insert, select, update

from toolwire.errors import StoreError
from toolwire.jsonenc import dumps
from toolwire.privacy import PrivacyLevel, filter_step, filter_text
from toolwire.runtime import RunOutcome, RunRequest, RunStatus
from toolwire.store import liveness, schema
from toolwire.store.engine import errors, make_engine, resolve_url, shown
from toolwire.store.migrations import migrate
from toolwire.store.records import RunSummary, StoredRun
from toolwire.tools.registry import Availability
from toolwire.trace import RunStep

MAX_LIST_LIMIT = 1_000  # one page of a listing; more is a query, not a page
INTERRUPTED_ERROR = "the process running this run stopped before the run finished"
TERMINAL = (
    RunStatus.COMPLETED,
    RunStatus.FAILED,
    RunStatus.CANCELLED,
    RunStatus.INTERRUPTED,
)
_runs, _steps = schema.runs, schema.steps
_STEP_COUNT = (
    select(func.count()).where(_steps.c.run_id == _runs.c.id).scalar_subquery().label("step_count")
)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Totals:
    termination_reason: str | None
    truncated: bool
    rounds: int
    prompt_tokens: int
    completion_tokens: int
    final_answer: str | None


class RunStore:
    """Runs and steps in a SQL database, filtered at ``privacy``. Safe to share across threads."""

    def __init__(self, url: str | None, *, privacy: PrivacyLevel = PrivacyLevel.METADATA) -> None:
        self.url = resolve_url(url)
        self.privacy = privacy
        self._engine: Engine = make_engine(self.url)
        self._owner = liveness.this_process()
        self._lock = threading.Lock()
        self._last_sequence: dict[str, int] = {}
        try:
            with errors(f"open {shown(self.url)}"):
                migrate(self._engine)
            self.mark_interrupted()
        except BaseException:
            self._engine.dispose()  # a store that failed to open keeps no connection
            raise

    @classmethod
    def open(
        cls, url: str | None = None, *, privacy: PrivacyLevel = PrivacyLevel.METADATA
    ) -> RunStore:
        """Open (creating and migrating if needed) the store at ``url``; see ``resolve_url``."""
        return cls(url, privacy=privacy)

    # -- recording (the RunRecorder protocol) ------------------------------------------------

    def begin(self, request: RunRequest) -> str:
        run_id = str(uuid.uuid4())
        values = {
            "id": run_id,
            "status": RunStatus.RUNNING.value,
            "created_at": _now(),
            "provider": _label(getattr(request.provider, "name", None)),
            "model": _label(request.model),
            "privacy_level": self.privacy.value,
            "owner_host": self._owner.host,
            "owner_pid": self._owner.pid,
            "owner_started": self._owner.started,
        }
        with errors("begin a run"), self._engine.begin() as connection:
            connection.execute(insert(_runs).values(values))
        return run_id

    def record_step(self, run_id: str, sequence: int, step: RunStep) -> None:
        self._claim_sequence(run_id, sequence)
        with errors(f"record step {sequence} of run {run_id}"):
            payload = dumps(filter_step(step.to_dict(), self.privacy))
            with self._engine.begin() as connection:
                connection.execute(
                    insert(_steps).values(
                        run_id=run_id,
                        sequence=sequence,
                        kind=step.kind,
                        round=step.round,
                        duration_ms=round(step.duration_ms, 2),
                        payload=payload,
                    )
                )

    def settle(self, outcome: RunOutcome) -> bool:
        totals = self._totals(outcome)
        keep_cancelled = case(
            (_runs.c.status == RunStatus.CANCELLED.value, RunStatus.CANCELLED.value),
            else_=outcome.status.value,
        )
        statement = (
            update(_runs)
            .where(_runs.c.id == outcome.run_id, _runs.c.settled == false())
            .where(_runs.c.status.in_([RunStatus.RUNNING.value, RunStatus.CANCELLED.value]))
            .values(
                status=keep_cancelled,
                settled=True,
                finished_at=_now(),
                error=outcome.error,
                final_answer_length=_length(outcome),
                **_values(totals),
            )
        )
        with self._lock:
            self._last_sequence.pop(outcome.run_id, None)
        with errors(f"settle run {outcome.run_id}"), self._engine.begin() as connection:
            return connection.execute(statement).rowcount == 1

    def cancel_requested(self, run_id: str) -> bool:
        statement = select(_runs.c.cancel_requested).where(_runs.c.id == run_id)
        with errors(f"read the cancel flag of run {run_id}"), self._engine.connect() as connection:
            return bool(connection.execute(statement).scalar())

    # -- operating ----------------------------------------------------------------------------

    def request_cancel(self, run_id: str) -> bool:
        """Ask a running run to stop; True if it exists and was running. The cancel wins."""
        statement = (
            update(_runs)
            .where(_runs.c.id == run_id, _runs.c.status == RunStatus.RUNNING.value)
            .values(cancel_requested=True, status=RunStatus.CANCELLED.value, finished_at=_now())
        )
        with errors(f"cancel run {run_id}"), self._engine.begin() as connection:
            return connection.execute(statement).rowcount == 1

    def list_runs(self, *, limit: int = 50, offset: int = 0) -> list[RunSummary]:
        """Runs, newest first."""
        if not 1 <= limit <= MAX_LIST_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIST_LIMIT}, not {limit}")
        if offset < 0:
            raise ValueError(f"offset must be 0 or more, not {offset}")
        statement = (
            select(_runs, _STEP_COUNT)
            .order_by(_runs.c.created_at.desc(), _runs.c.uid.desc())
            .limit(limit)
            .offset(offset)
        )
        with errors("list runs"), self._engine.connect() as connection:
            return [RunSummary.from_row(r._mapping) for r in connection.execute(statement)]

    def get_run(self, run_id: str) -> StoredRun | None:
        """One run with its stored steps, or None if there is no such run."""
        run_query = select(_runs, _STEP_COUNT).where(_runs.c.id == run_id)
        step_query = (
            select(_steps.c.sequence, _steps.c.payload)
            .where(_steps.c.run_id == run_id)
            .order_by(_steps.c.sequence)
        )
        with errors(f"read run {run_id}"), self._engine.connect() as connection:
            row = connection.execute(run_query).first()
            if row is None:
                return None
            step_rows = [s._mapping for s in connection.execute(step_query)]
        return StoredRun.from_rows(row._mapping, step_rows)

    def purge(self, *, older_than_days: float) -> int:
        """Delete finished runs created more than ``older_than_days`` ago; return how many."""
        if not math.isfinite(older_than_days) or older_than_days < 0:
            raise ValueError(f"older_than_days must be 0 or more days, not {older_than_days}")
        cutoff = _now() - timedelta(days=older_than_days)
        doomed = select(_runs.c.id).where(
            _runs.c.created_at < cutoff, _runs.c.status.in_([s.value for s in TERMINAL])
        )
        with errors("purge old runs"), self._engine.begin() as connection:
            ids = list(connection.execute(doomed).scalars())
            for chunk in _chunks(ids):
                connection.execute(delete(_steps).where(_steps.c.run_id.in_(chunk)))
                connection.execute(delete(_runs).where(_runs.c.id.in_(chunk)))
        return len(ids)

    def mark_interrupted(self) -> int:
        """Mark runs whose owning process died on this host ``interrupted``; return how many."""
        query = select(
            _runs.c.id, _runs.c.owner_host, _runs.c.owner_pid, _runs.c.owner_started
        ).where(_runs.c.status == RunStatus.RUNNING.value, _runs.c.owner_host == self._owner.host)
        with errors("check for interrupted runs"), self._engine.begin() as connection:
            dead = [row.id for row in connection.execute(query) if liveness.is_dead(_owner(row))]
            for run_id in dead:
                connection.execute(
                    update(_runs)
                    .where(_runs.c.id == run_id, _runs.c.status == RunStatus.RUNNING.value)
                    .values(
                        status=RunStatus.INTERRUPTED.value,
                        finished_at=_now(),
                        error=INTERRUPTED_ERROR,
                    )
                )
        return len(dead)

    # -- tool availability --------------------------------------------------------------------

    def load_availability(self) -> Availability:
        with errors("read tool states"), self._engine.connect() as connection:
            tools: dict[str, Any] = dict(connection.execute(select(schema.tool_state)).all())
            groups: dict[str, Any] = dict(connection.execute(select(schema.tool_group_state)).all())
        return Availability(tools=_flags(tools), groups=_flags(groups))

    def set_tool_state(self, name: str, enabled: bool | None) -> None:
        """Override a tool's state; None removes the override."""
        self._set_state(schema.tool_state, "tool", name, enabled)

    def set_group_state(self, name: str, enabled: bool | None) -> None:
        """Override a group's state; None removes the override."""
        self._set_state(schema.tool_group_state, "group", name, enabled)

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- helpers ------------------------------------------------------------------------------

    def _claim_sequence(self, run_id: str, sequence: int) -> None:
        with self._lock:
            last = self._last_sequence.get(run_id, 0)
            if sequence <= last:
                raise StoreError(
                    f"step sequence {sequence} of run {run_id} is not after the last one ({last})"
                )
            self._last_sequence[run_id] = sequence

    def _totals(self, outcome: RunOutcome) -> _Totals:
        result = outcome.result
        if result is None:
            llm = [s for s in outcome.steps if s.kind == "llm"]
            return _Totals(
                termination_reason=_reason_without_result(outcome.status),
                truncated=False,
                rounds=max((s.round for s in llm), default=0),
                prompt_tokens=sum(s.prompt_tokens or 0 for s in llm),
                completion_tokens=sum(s.completion_tokens or 0 for s in llm),
                final_answer=None,
            )
        return _Totals(
            termination_reason=result.reason.value,
            truncated=result.truncated,
            rounds=result.iterations,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            final_answer=filter_text(result.final_content, self.privacy),
        )

    def _set_state(self, table: Any, what: str, name: str, enabled: bool | None) -> None:
        if not name or len(name) > schema.NAME_CHARS:
            raise ValueError(f"a {what} name must be 1 to {schema.NAME_CHARS} characters long")
        with errors(f"set the state of {what} {name!r}"), self._engine.begin() as connection:
            connection.execute(delete(table).where(table.c.name == name))
            if enabled is not None:
                connection.execute(insert(table).values(name=name, enabled=enabled))


PURGE_CHUNK = 500  # ids per DELETE: well under every driver's bound-parameter limit


def _now() -> datetime:
    return datetime.now(UTC)


def _label(value: object) -> str | None:
    """A provider or model label, cut to fit its column."""
    if not isinstance(value, str) or not value:
        return None
    return value[: schema.NAME_CHARS]


def _length(outcome: RunOutcome) -> int | None:
    return None if outcome.result is None else len(outcome.result.final_content)


def _values(totals: _Totals) -> dict[str, Any]:
    return asdict(totals)


def _reason_without_result(status: RunStatus) -> str | None:
    return "cancelled" if status is RunStatus.CANCELLED else None


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), PURGE_CHUNK):
        yield ids[start : start + PURGE_CHUNK]


def _owner(row: Any) -> liveness.Owner:
    return liveness.Owner(host=row.owner_host, pid=row.owner_pid or 0, started=row.owner_started)


def _flags(rows: dict[str, Any]) -> dict[str, bool]:
    return {name: bool(enabled) for name, enabled in rows.items()}
