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
  (see :mod:`toolwire.store.liveness`), and so is a held call whose caller died, also when a
  decision on it is about to be taken.
- Steps are written behind the run by one writer thread in batches (see
  :mod:`toolwire.store.writer`); every read and every settle waits for them first.
- A cancel is seen at once by the store that requested it, and by other processes' stores
  within ``cancels.POLL_SECONDS`` (then at the run's next step boundary), without a query on
  the thread that runs the run.
- A queued run held by a worker (``hold``) is written under its claim: its checkpoint, its
  suspension and its settle change nothing once another worker holds it (the run is then
  stopped at its next step boundary, like a cancel), and its steps and answer are filtered at
  the run's own privacy level. A queued run is never marked ``interrupted``: its worker's
  heartbeats decide (see :mod:`toolwire.queue`).
- Every failure is a :class:`toolwire.errors.StoreError`; the runtime keeps a run going
  without its store when one is raised.
"""

from __future__ import annotations

import atexit
import dataclasses
import math
import re
import threading
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    and_,
    case,
    delete,
    false,
    func,
    insert,
    or_,
    select,
    true,
    update,
)

from toolwire.errors import StoreError
from toolwire.governance import decider_of, decisions_of_outcome, decisions_of_step
from toolwire.jsonenc import sink_dumps
from toolwire.lifecycle import CANCELLABLE, TERMINAL, WAITING, RunStatus, as_strings
from toolwire.privacy import PrivacyLevel, filter_run_step
from toolwire.runtime import DIRECT_CALL, ProviderRef, RunOutcome, RunRequest, Waiting
from toolwire.store import browse, liveness, schema, search
from toolwire.store.browse import RunPage, RunQuery
from toolwire.store.cancels import CancelWatch
from toolwire.store.engine import errors, make_engine, resolve_url, shown
from toolwire.store.gates import GATE_COLUMNS, INSERT_GATE, GateRecord, audit_query, gate_rows
from toolwire.store.hotpath import Compiled, HotPath
from toolwire.store.migrations import migrate
from toolwire.store.records import Progress, RunSummary, StoredRun, step_dict
from toolwire.store.statements import (
    ERASED,
    FAILED_CALLS,
    FINISH_TOTALS,
    INSERT_RUN,
    INSERT_STEP,
    SETTLE,
    SETTLE_HELD,
    STEP_COLUMNS,
    STEP_COUNT,
    recorded_totals,
    settle_values,
    step_columns,
)
from toolwire.store.writer import StepWriter
from toolwire.text import storable
from toolwire.tools.registry import Availability
from toolwire.trace import RunStep

MAX_LIST_LIMIT = browse.MAX_PAGE  # one page of a listing; more is a query, not a page
EXPORT_BATCH = 200  # runs read per query while exporting
INTERRUPTED_ERROR = "the process running this run stopped before the run finished"
CALLER_GONE = "the caller waiting for this call stopped before it was decided"
_runs, _steps, _gates = schema.runs, schema.steps, schema.gate_decisions
_GATES = "gates"  # the key of a step row's governance rows (written beside it, not in it)
_TEXT = "body"  # the key of a step row's words for search (written beside it, see search)
_MAX_SEQUENCE = (
    select(func.max(_steps.c.sequence))
    .where(_steps.c.run_id == _runs.c.id)
    .scalar_subquery()
    .label("max_sequence")
)


@dataclass(frozen=True, slots=True)
class Held:
    """A queued run this process's worker holds: its claim and its own privacy level."""

    claim: str
    privacy: PrivacyLevel


class RunStore:
    """Runs and steps in a SQL database, filtered at ``privacy``. Safe to share across threads."""

    def __init__(self, url: str | None, *, privacy: PrivacyLevel = PrivacyLevel.METADATA) -> None:
        self.url = resolve_url(url)
        self.privacy = privacy
        self._engine: Engine = make_engine(self.url)
        self._hot = HotPath(make_engine(self.url, pooled=False))
        dialect = self._engine.dialect
        self._insert_step = Compiled(INSERT_STEP, dialect, list(STEP_COLUMNS))
        self._insert_text = Compiled(
            search.insert(dialect), dialect, ["run_id", "sequence", "body"]
        )
        self._insert_gate = Compiled(INSERT_GATE, dialect, list(GATE_COLUMNS))
        self._deciders: dict[str, str] = {}  # who decided each run's paused turn, per segment
        self._writer = StepWriter(self.encode_step, self._insert_steps)
        atexit.register(self._writer.flush)  # a store never closed still writes its last steps
        self._owner = liveness.this_process()
        self._lock = threading.Lock()
        self._last_sequence: dict[str, int] = {}
        self._held: dict[str, Held] = {}
        self._cancels = CancelWatch(self._cancelled_among)
        try:
            with errors(f"open {shown(self.url)}"):
                migrate(self._engine)
            self.mark_interrupted()
        except BaseException:
            self.close()  # a store that failed to open keeps no connection
            raise

    @classmethod
    def open(
        cls, url: str | None = None, *, privacy: PrivacyLevel = PrivacyLevel.METADATA
    ) -> RunStore:
        """Open (creating and migrating if needed) the store at ``url``; see ``resolve_url``."""
        return cls(url, privacy=privacy)

    # -- recording (the RunRecorder protocol) ------------------------------------------------

    @property
    def engine(self) -> Engine:
        return self._engine

    def begin(self, request: RunRequest) -> str:
        run_id = str(uuid.uuid4())
        row = self.run_row(run_id, request)
        with errors("begin a run"), self._engine.begin() as connection:
            connection.execute(INSERT_RUN, row)
        self._cancels.watch(run_id)
        return run_id

    def run_row(
        self, run_id: str, request: RunRequest, status: RunStatus = RunStatus.RUNNING
    ) -> dict[str, Any]:
        """The row a new run is inserted as: who runs it, with what provider, kept how."""
        ref = request.provider_ref
        return {
            "id": run_id,
            "status": status.value,
            "created_at": _now(),
            "provider": _label(ref.name),
            "model": _label(request.model),
            "base_url": _text(ref.base_url),
            "trust_zone": _label(ref.trust_zone, 32),
            "script": _text(ref.script),
            "max_tokens_field": _label(ref.max_tokens_field, 32),
            "privacy_level": self.privacy.value,
            "options": sink_dumps(_options(request)),
            "rerun_of": request.rerun_of if is_run_id(request.rerun_of or "") else None,
            "owner_host": self._owner.host,
            "owner_pid": self._owner.pid,
            "owner_started": self._owner.started,
        }

    @property
    def owner(self) -> liveness.Owner:
        """This process, as a run's owner."""
        return self._owner

    def hold(self, run_id: str, claim: str, privacy: PrivacyLevel) -> None:
        """Write the queued run ``run_id`` under ``claim``, at its own ``privacy``, and watch it:
        a cancel, or another worker taking it, stops it at its next step boundary."""
        with self._lock:
            self._held[run_id] = Held(claim, privacy)
        self._cancels.watch(run_id)

    def release(self, run_id: str) -> None:
        with self._lock:
            self._held.pop(run_id, None)
            self._last_sequence.pop(run_id, None)  # a later hold counts from the store again
        self._cancels.forget(run_id)

    def held(self, run_id: str) -> Held | None:
        with self._lock:
            return self._held.get(run_id)

    def record_step(self, run_id: str, sequence: int, step: RunStep) -> None:
        """Queue ``step`` for the writer; an earlier failure of this run is raised here."""
        self._claim_sequence(run_id, sequence)
        self._writer.put(run_id, sequence, step)

    def settle(self, outcome: RunOutcome) -> bool:
        """Write the outcome once; then raise if one of the run's steps could not be stored."""
        self._writer.flush()
        held = self.held(outcome.run_id)
        privacy = self.privacy if held is None else held.privacy
        values = settle_values(outcome, privacy, finished_at=_now())
        if outcome.result is None:  # every segment's calls, not just the last one's
            values |= self._recorded_cost(outcome.run_id) or {}
        with self._lock:
            self._last_sequence.pop(outcome.run_id, None)
        self._deciders.pop(outcome.run_id, None)
        self._cancels.forget(outcome.run_id)
        cut_off = gate_rows(outcome.run_id, None, decisions_of_outcome(outcome), _now())
        statement = SETTLE if held is None else SETTLE_HELD
        if held is not None:
            values["held_claim"] = held.claim
        with errors(f"settle run {outcome.run_id}"), self._engine.begin() as connection:
            settled = connection.execute(statement, values).rowcount == 1
            if settled and cut_off:
                connection.execute(insert(_gates), cut_off)
            if settled:
                _finish(connection, outcome.run_id, values["final_answer"], values["error"])
        self._writer.raise_failure(outcome.run_id)
        return settled

    def _recorded_cost(self, run_id: str) -> dict[str, Any] | None:
        """The cost of a run's stored model calls, over all its segments; None without any."""
        with errors(f"read the cost of run {run_id}"), self._engine.connect() as connection:
            totals = recorded_totals(connection, run_id)
        if totals["cost"] is None:
            return None
        return {"cost": totals["cost"], "cost_complete": totals["cost_complete"]}

    def cancel_requested(self, run_id: str) -> bool:
        """True once the run was cancelled: at once through this store, else within a poll.

        Reads memory only (see :mod:`toolwire.store.cancels`): a run on an event loop checks
        this at every step and must not wait on the database.
        """
        return self._cancels.cancelled(run_id)

    def _cancelled_among(self, run_ids: Collection[str]) -> list[str]:
        """The runs cancelled, and the held ones another worker has taken since."""
        query = select(_runs.c.id, _runs.c.cancel_requested, _runs.c.claim).where(
            _runs.c.id.in_(list(run_ids))
        )
        with self._engine.connect() as connection:
            rows = connection.execute(query).all()
        return [row.id for row in rows if row.cancel_requested or self._lost(row.id, row.claim)]

    def _lost(self, run_id: str, claim: str | None) -> bool:
        held = self.held(run_id)
        return held is not None and claim != held.claim

    def suspend(self, run_id: str, status: RunStatus, sealed: str, digest: str) -> bool:
        """Move a running run to waiting with its sealed state; False if a cancel won.

        A run one of whose steps could not be stored raises before it moves: its record is
        incomplete, so it fails (and settles) instead of waiting on a turn it cannot show.
        """
        self._writer.flush()
        self._writer.raise_failure(run_id)
        statement = (
            update(_runs)
            .where(_runs.c.id == run_id, _runs.c.status == RunStatus.RUNNING.value)
            .values(status=status.value, suspended_state=sealed, pending_digest=digest,
                    checkpoint=None, claim=None)
        )  # fmt: skip
        held = self.held(run_id)
        if held is not None:
            statement = statement.where(_runs.c.claim == held.claim)
        with errors(f"suspend run {run_id}"), self._engine.begin() as connection:
            moved = connection.execute(statement).rowcount == 1
            if moved:  # the stored-runs table shows what a waiting run has done so far
                connection.execute(
                    update(_runs)
                    .where(_runs.c.id == run_id)
                    .values(**recorded_totals(connection, run_id), tool_errors=FAILED_CALLS)
                )
        with self._lock:
            self._last_sequence.pop(run_id, None)
        self._deciders.pop(run_id, None)
        self._cancels.forget(run_id)
        return moved

    def waiting(self, run_id: str) -> Waiting | None:
        """The run, with its sealed state, if it is waiting for a decision."""
        if not is_run_id(run_id):
            return None
        self._writer.flush()
        query = select(_runs, _MAX_SEQUENCE).where(
            _runs.c.id == run_id, _runs.c.status.in_(as_strings(WAITING))
        )
        with errors(f"read run {run_id}"), self._engine.connect() as connection:
            row = connection.execute(query).first()
        if row is None or row.suspended_state is None or row.pending_digest is None:
            return None
        if row.provider == DIRECT_CALL and liveness.is_dead(_owner(row)):
            with errors(f"interrupt run {run_id}"), self._engine.begin() as connection:
                _abandon(connection, run_id)
            return None
        return Waiting(
            run_id=run_id,
            status=RunStatus(row.status),
            sealed=row.suspended_state,
            digest=row.pending_digest,
            provider=ProviderRef(
                name=row.provider or "",
                model=row.model,
                base_url=row.base_url,
                trust_zone=row.trust_zone,
                script=row.script,
                max_tokens_field=row.max_tokens_field,
            ),
            next_sequence=int(row.max_sequence or 0) + 1,
            queued=bool(row.queued),
        )

    def claim(self, run_id: str, status: RunStatus, digest: str) -> bool:
        """Atomically take a waiting run back to running: of racing claims, one wins."""
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
                owner_host=self._owner.host,
                owner_pid=self._owner.pid,
                owner_started=self._owner.started,
            )
        )
        with errors(f"claim run {run_id}"), self._engine.begin() as connection:
            claimed = connection.execute(statement).rowcount == 1
        if claimed:
            self._cancels.watch(run_id)
        return claimed

    def hand_over(self, run_id: str, sealed: str) -> None:
        """Keep a held call's sealed answer for the caller waiting for it."""
        statement = update(_runs).where(_runs.c.id == run_id).values(held_answer=sealed)
        with errors(f"hand over the answer of run {run_id}"), self._engine.begin() as connection:
            connection.execute(statement)

    def take_answer(self, run_id: str) -> tuple[RunStatus, str | None] | None:
        """The run's status and, once it ended, its held answer, erased as it is taken.

        None when there is no such run."""
        if not is_run_id(run_id):
            return None
        query = select(_runs.c.status, _runs.c.held_answer).where(_runs.c.id == run_id)
        erase = update(_runs).where(_runs.c.id == run_id).values(held_answer=None)
        with errors(f"read the answer of run {run_id}"), self._engine.begin() as connection:
            row = connection.execute(query).first()
            if row is None:
                return None
            status = RunStatus(row.status)
            if not status.terminal:
                return status, None
            if row.held_answer is not None:
                connection.execute(erase)
            return status, row.held_answer

    # -- operating ----------------------------------------------------------------------------

    def request_cancel(self, run_id: str) -> bool:
        """Cancel a running or waiting run; True if it was one. The cancel wins.

        A running run stops at its next step boundary and its runtime settles the totals; a
        waiting or queued run is settled here. Every sealed value of the run is erased.
        """
        if not is_run_id(run_id):
            return False
        running = _runs.c.status == RunStatus.RUNNING.value
        statement = (
            update(_runs)
            .where(_runs.c.id == run_id, _runs.c.status.in_(as_strings(CANCELLABLE)))
            .values(
                cancel_requested=True,
                status=RunStatus.CANCELLED.value,
                finished_at=_now(),
                settled=case((running, false()), else_=true()),
                termination_reason=case((running, None), else_="cancelled"),
                **ERASED,
            )
        )
        with errors(f"cancel run {run_id}"), self._engine.begin() as connection:
            cancelled = connection.execute(statement).rowcount == 1
            if cancelled:
                connection.execute(FINISH_TOTALS, {"run_id": run_id})
        if cancelled:
            self._cancels.mark(run_id)
        return cancelled

    def list_runs(
        self, *, limit: int = 50, offset: int = 0, waiting: bool = False
    ) -> list[RunSummary]:
        """Runs, newest first; only those waiting for a person when ``waiting``."""
        query = RunQuery(limit=limit, offset=offset, waiting=waiting)
        page: list[RunSummary] = self.find_runs(query, total=False).runs
        return page

    def find_runs(self, query: RunQuery, *, total: bool = True) -> RunPage:
        """One page of the runs ``query`` asks for, and (with ``total``) how many match."""
        dialect = self._engine.dialect
        self._writer.flush()
        with errors("list runs"), self._engine.connect() as connection:
            rows = [
                RunSummary.from_row(r._mapping)
                for r in connection.execute(browse.page(query, dialect))
            ]
            if not total:
                return RunPage(runs=rows, total=-1)
            if query.offset == 0 and len(rows) < query.limit:
                return RunPage(runs=rows, total=len(rows))
            counted = connection.execute(browse.count(query, dialect)).scalar_one()
        return RunPage(runs=rows, total=int(counted))

    def facets(self) -> dict[str, list[str]]:
        """The values each filter of the runs browser can take (at most ``MAX_FACETS`` each)."""
        with errors("list filter values"), self._engine.connect() as connection:
            return {
                name: [str(v) for v in connection.execute(statement).scalars()]
                for name, statement in browse.facets().items()
            }

    def first_requests(self, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The first stored request step of each of ``run_ids`` that has one."""
        wanted = [i for i in run_ids if is_run_id(i)]
        if not wanted:
            return {}
        self._writer.flush()
        with errors("read requests"), self._engine.connect() as connection:
            rows = connection.execute(browse.first_requests(wanted)).all()
        return {row.run_id: step_dict({"sequence": 0, "payload": row.payload}) for row in rows}

    def export(self, query: RunQuery) -> Iterator[StoredRun]:
        """Every run ``query`` matches, oldest first, each with its steps; read in batches."""
        dialect = self._engine.dialect
        batch = RunQuery(**{**_fields(query), "limit": EXPORT_BATCH, "offset": 0})
        self._writer.flush()
        after: tuple[datetime, int] | None = None
        while True:
            with errors("export runs"), self._engine.connect() as connection:
                rows = [r._mapping for r in connection.execute(
                    browse.export_batch(batch, dialect, after))]  # fmt: skip
                ids = [row["id"] for row in rows]
                steps = connection.execute(browse.steps_of(ids)).all() if ids else []
            by_run: dict[str, list[Mapping[str, Any]]] = {}
            for step in steps:
                by_run.setdefault(step.run_id, []).append(dict(step._mapping))
            for row in rows:
                yield StoredRun.from_rows(row, by_run.get(row["id"], []))
            if len(rows) < EXPORT_BATCH:
                return
            after = (rows[-1]["created_at"], rows[-1]["uid"])

    def ids_starting(self, prefix: str) -> list[str]:
        """Up to 100 run ids that begin with ``prefix``."""
        if not prefix or not is_run_id(prefix):
            return []
        with errors("find runs by id"), self._engine.connect() as connection:
            return list(connection.execute(browse.ids_starting(prefix)).scalars())

    def get_run(self, run_id: str) -> StoredRun | None:
        """One run with its stored steps, or None if there is no such run."""
        if not is_run_id(run_id):
            return None
        run_query = select(_runs, STEP_COUNT).where(_runs.c.id == run_id)
        step_query = (
            select(_steps.c.sequence, _steps.c.payload)
            .where(_steps.c.run_id == run_id)
            .order_by(_steps.c.sequence)
        )
        self._writer.flush()
        with errors(f"read run {run_id}"), self._engine.connect() as connection:
            row = connection.execute(run_query).first()
            if row is None:
                return None
            step_rows = [s._mapping for s in connection.execute(step_query)]
        return StoredRun.from_rows(row._mapping, step_rows)

    def list_gate_decisions(
        self,
        *,
        since: datetime | None = None,
        tool: str | None = None,
        reason: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[GateRecord]:
        """The governance log, newest first: every gate decision that refused or changed
        something, matching each filter given (see :mod:`toolwire.governance`)."""
        if run_id is not None and not is_run_id(run_id):
            return []
        query = audit_query(since=since, tool=_filter(tool), reason=_filter(reason),
                            run_id=run_id, limit=limit, offset=offset)  # fmt: skip
        self._writer.flush()
        with errors("read the governance log"), self._engine.connect() as connection:
            return [GateRecord.from_row(r._mapping) for r in connection.execute(query)]

    def progress(self, run_id: str, after: int = 0) -> Progress | None:
        """The run, and its steps stored after sequence ``after``; None without such a run.
        (For following a run executed elsewhere: another process, or a queue worker.)"""
        if not is_run_id(run_id):
            return None
        run_query = select(_runs, STEP_COUNT).where(_runs.c.id == run_id)
        step_query = (
            select(_steps.c.sequence, _steps.c.payload)
            .where(_steps.c.run_id == run_id, _steps.c.sequence > after)
            .order_by(_steps.c.sequence)
        )
        self._writer.flush()
        with errors(f"read run {run_id}"), self._engine.connect() as connection:
            row = connection.execute(run_query).first()
            if row is None:
                return None
            steps = [step_dict(s._mapping) for s in connection.execute(step_query)]
        return Progress(run=RunSummary.from_row(row._mapping), settled=bool(row.settled),
                        steps=steps)  # fmt: skip

    def purge(self, *, older_than_days: float) -> int:
        """Delete finished runs created more than ``older_than_days`` ago; return how many."""
        if not math.isfinite(older_than_days) or older_than_days < 0:
            raise ValueError(f"older_than_days must be 0 or more days, not {older_than_days}")
        self._writer.flush()
        cutoff = _now() - timedelta(days=older_than_days)
        doomed = select(_runs.c.id, _runs.c.uid).where(
            _runs.c.created_at < cutoff, _runs.c.status.in_(as_strings(TERMINAL))
        )
        with errors("purge old runs"), self._engine.begin() as connection:
            found = connection.execute(doomed).all()
            ids = [row.id for row in found]
            search.delete_runs(connection, [row.uid for row in found])
            for chunk in _chunks(ids):
                connection.execute(delete(_gates).where(_gates.c.run_id.in_(chunk)))
                connection.execute(delete(_steps).where(_steps.c.run_id.in_(chunk)))
                connection.execute(delete(_runs).where(_runs.c.id.in_(chunk)))
        return len(ids)

    def mark_interrupted(self) -> int:
        """Mark runs whose owning process died on this host ``interrupted``; return how many.

        Their rounds, tokens and cost are what their stored model calls say. A held call
        waiting for a caller that died is interrupted too: nobody would get its answer.
        """
        running = _runs.c.status == RunStatus.RUNNING.value
        held = and_(_runs.c.status.in_(as_strings(WAITING)), _runs.c.provider == DIRECT_CALL)
        query = select(
            _runs.c.id,
            _runs.c.status,
            _runs.c.owner_host,
            _runs.c.owner_pid,
            _runs.c.owner_started,
        ).where(
            or_(running, held),
            _runs.c.owner_host == self._owner.host,
            or_(_runs.c.queued.is_(None), _runs.c.queued == false()),  # see toolwire.queue
        )
        with errors("check for interrupted runs"), self._engine.begin() as connection:
            dead = [row for row in connection.execute(query) if liveness.is_dead(_owner(row))]
            for row in dead:
                if row.status != RunStatus.RUNNING.value:
                    _abandon(connection, row.id)
                    continue
                connection.execute(
                    update(_runs)
                    .where(_runs.c.id == row.id, running)
                    .values(
                        status=RunStatus.INTERRUPTED.value,
                        finished_at=_now(),
                        error=INTERRUPTED_ERROR,
                        **ERASED,
                        **recorded_totals(connection, row.id),
                    )
                )
                connection.execute(FINISH_TOTALS, {"run_id": row.id})
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

    def flush(self) -> None:
        """Wait until every step recorded so far is written."""
        self._writer.flush()

    def close(self) -> None:
        atexit.unregister(self._writer.flush)
        self._cancels.close()
        self._writer.close()
        self._hot.close()
        self._engine.dispose()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- helpers ------------------------------------------------------------------------------

    def encode_step(self, run_id: str, sequence: int, step: RunStep) -> dict[str, Any]:
        """The row of one step, filtered at the run's level (a held run's own, else the
        store's), with the governance rows derived from what the filter kept (writer thread)."""
        held = self._held.get(run_id)  # a dict read is atomic; no lock on the writer's path
        kept = filter_run_step(step, self.privacy if held is None else held.privacy)
        decider = decider_of(kept)
        if decider is not None:
            self._deciders[run_id] = decider
        return self.step_row(run_id, sequence, step, kept, self._deciders.get(run_id))

    @staticmethod
    def step_row(
        run_id: str, sequence: int, step: RunStep, kept: dict[str, Any], decider: str | None
    ) -> dict[str, Any]:
        """The row of one step, ``kept`` being what its privacy filter kept, with the governance
        rows derived from it (``decider``: who decided the run's paused turn, if anyone) and the
        words it holds for search (see :mod:`toolwire.store.search`)."""
        decisions = decisions_of_step(kept, decider)
        return {
            "run_id": run_id,
            "sequence": sequence,
            "kind": step.kind,
            "round": step.round,
            "duration_ms": round(step.duration_ms, 2),
            "payload": sink_dumps(kept),
            **step_columns(step.kind, kept),
            _TEXT: search.step_body(kept) if sequence < search.SEQUENCE_SPAN else "",
            _GATES: gate_rows(run_id, sequence, decisions, _now()) if decisions else (),
        }

    @staticmethod
    def insert_step(connection: Connection, row: Mapping[str, Any]) -> None:
        """Insert a row made by :meth:`step_row`, with its governance rows and its words, in the
        caller's transaction."""
        beside = (_GATES, _TEXT)
        connection.execute(insert(_steps).values({k: v for k, v in row.items() if k not in beside}))
        if row[_GATES]:
            connection.execute(insert(_gates), list(row[_GATES]))
        if row[_TEXT]:
            words = {"run_id": row["run_id"], "sequence": row["sequence"], "body": row[_TEXT]}
            connection.execute(search.insert(connection.dialect), words)

    def _insert_steps(self, rows: list[Mapping[str, Any]]) -> None:
        gates = [gate for row in rows for gate in row[_GATES]]
        texts = [row for row in rows if row[_TEXT]]
        self._hot.execute_many(
            self._insert_step, rows, (self._insert_gate, gates), (self._insert_text, texts)
        )

    def _claim_sequence(self, run_id: str, sequence: int) -> None:
        with self._lock:
            last = self._last_sequence.get(run_id, 0)
            if sequence <= last:
                raise StoreError(
                    f"step sequence {sequence} of run {run_id} is not after the last one ({last})"
                )
            self._last_sequence[run_id] = sequence

    def _set_state(self, table: Any, what: str, name: str, enabled: bool | None) -> None:
        if not name or len(name) > schema.NAME_CHARS:
            raise ValueError(f"a {what} name must be 1 to {schema.NAME_CHARS} characters long")
        with errors(f"set the state of {what} {name!r}"), self._engine.begin() as connection:
            connection.execute(delete(table).where(table.c.name == name))
            if enabled is not None:
                connection.execute(insert(table).values(name=name, enabled=enabled))


RUN_ID = re.compile(r"[0-9A-Za-z-]{1,64}")
PURGE_CHUNK = 500  # ids per DELETE: well under every driver's bound-parameter limit


def _now() -> datetime:
    return datetime.now(UTC)


def is_run_id(value: str) -> bool:
    """Whether ``value`` can name a run: ids are UUIDs, so anything else is simply not found
    (and never reaches a driver, which may refuse it: PostgreSQL text cannot hold NUL)."""
    return RUN_ID.fullmatch(value) is not None


def _label(value: object, chars: int = schema.NAME_CHARS) -> str | None:
    """A provider or model label, cut to fit its column."""
    if not isinstance(value, str) or not value:
        return None
    return storable(value[:chars])


def _filter(value: str | None) -> str | None:
    """A filter value as the store could hold it (a NUL would make PostgreSQL refuse the query)."""
    return None if value is None else storable(value)


def _text(value: object) -> str | None:
    return storable(value) if isinstance(value, str) and value else None


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), PURGE_CHUNK):
        yield ids[start : start + PURGE_CHUNK]


def _abandon(connection: Connection, run_id: str) -> None:
    """A held call whose caller died: interrupted, its sealed state erased, never decided."""
    connection.execute(
        update(_runs)
        .where(_runs.c.id == run_id, _runs.c.status.in_(as_strings(WAITING)))
        .values(
            status=RunStatus.INTERRUPTED.value,
            finished_at=_now(),
            error=CALLER_GONE,
            settled=True,
            suspended_state=None,
            pending_digest=None,
        )
    )
    connection.execute(FINISH_TOTALS, {"run_id": run_id})


def _finish(connection: Connection, run_id: str, answer: str | None, error: str | None) -> None:
    """A settled run's duration and failed calls, and its answer's words for search."""
    connection.execute(FINISH_TOTALS, {"run_id": run_id})
    body = search.run_body(answer, error)
    if body:
        connection.execute(search.insert(connection.dialect),
                           {"run_id": run_id, "sequence": 0, "body": body})  # fmt: skip


def _options(request: RunRequest) -> dict[str, Any]:
    """What a run was asked to do, as stored: its options (metadata, never a prompt)."""
    return {**request.options.to_dict(), "dry_run": request.options.dry_run}


def _fields(query: RunQuery) -> dict[str, Any]:
    return {f.name: getattr(query, f.name) for f in dataclasses.fields(query)}


def _owner(row: Any) -> liveness.Owner:
    return liveness.Owner(host=row.owner_host, pid=row.owner_pid or 0, started=row.owner_started)


def _flags(rows: dict[str, Any]) -> dict[str, bool]:
    return {name: bool(enabled) for name, enabled in rows.items()}
