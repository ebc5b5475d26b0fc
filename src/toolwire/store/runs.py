"""The audit store: every run and its steps, privacy-filtered, in SQLite or PostgreSQL.

``RunStore`` implements :class:`toolwire.runs.runtime.RunRecorder` (begin, record_step, settle,
cancel_requested) and the reading side the inspector and the command line use. It keeps what
belongs to this process (the step writer, the cancel watch, the runs its worker holds) and
hands each concern's SQL to its module: :mod:`~toolwire.store.rows` (what a run and a step are
written as), :mod:`~toolwire.store.waiting` (suspend, claim, held answers),
:mod:`~toolwire.store.interrupted`, :mod:`~toolwire.store.reading`,
:mod:`~toolwire.store.purge` and :mod:`~toolwire.store.availability`.

Invariants:
- A step is filtered at its run's privacy level (its charter's, see :mod:`toolwire.policy.charter`)
  before it is encoded; nothing unfiltered is ever written. The run's final answer follows
  the same level. The store's own ``privacy`` is only the level of runs submitted without
  one; a run carried on here (resumed, or held by a worker) keeps its own (``keep``).
- Sequence numbers are unique per run (the table key) and increasing (checked per run here).
- A run settles once: the first settle wins and later ones return False. A cancel that won
  (``request_cancel`` on a running run) keeps the run ``cancelled`` whatever the settle says.
- A run's terminal status is written first, in a transaction of its own that grows nothing
  (the row's sealed state is erased, its answer not yet written); then its answer, its gate
  rows, totals and search words. On a full disk the second part is what fails, and the failure
  is raised (the outcome reports it): the run stays as it ended, never ``running`` for a later
  open to relabel ``interrupted``.
- A settled run's rounds, tokens and cost are the whole run's, over every segment, however its
  last segment ended: a finished one's come from the run's state (which carries them across
  segments), a failed or cancelled one's from every model call the run recorded.
- A run whose owning process died on this host is marked ``interrupted`` when a store opens
  (see :mod:`toolwire.store.interrupted`), and so is a held call whose caller died, also when a
  decision on it is about to be taken.
- Steps are written behind the run by one writer thread in batches (see
  :mod:`toolwire.store.writer`); every read and every settle waits for them first.
- A cancel is seen at once by the store that requested it, and by other processes' stores
  within ``cancels.POLL_SECONDS``, without a query on the thread that runs the run; a running
  segment hears of it then (``on_cancel``) and aborts its in-flight call.
- A queued run held by a worker (``hold``) is written under its claim: its checkpoint, its
  suspension and its settle change nothing once another worker holds it (the run is then
  stopped like a cancelled one), and its steps and answer are filtered at
  the run's own privacy level. A queued run is never marked ``interrupted``: its worker's
  heartbeats decide (see :mod:`toolwire.queue`).
- Every failure is a :class:`toolwire.core.errors.StoreError`; the runtime keeps a run going
  without its store when one is raised.
"""

from __future__ import annotations

import atexit
import json
import threading
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, case, false, or_, select, true, update

from toolwire.core.binding import Sealer
from toolwire.core.errors import StoreError
from toolwire.core.lifecycle import CANCELLABLE, RunStatus, as_strings
from toolwire.loop.governance import Gate, decider_of, decisions_of_outcome
from toolwire.loop.run import RunOutcome, RunRequest
from toolwire.policy.charter import Charter
from toolwire.policy.egress import workspace_key
from toolwire.policy.privacy import PrivacyLevel, filter_run_step
from toolwire.policy.trace import RunStep
from toolwire.runs.questions import Gone, LiveQuestion, StoredAnswer
from toolwire.runs.recorder import Waiting
from toolwire.store import (
    availability,
    interrupted,
    liveness,
    purge,
    questions,
    reading,
    rows,
    schema,
    search,
    waiting,
)
from toolwire.store.browse import Neighbours, RunPage, RunQuery
from toolwire.store.cancels import CancelWatch
from toolwire.store.egress import EGRESS_COLUMNS, INSERT_EGRESS, EgressTotal, Group
from toolwire.store.egress import refused_calls as _refused_calls
from toolwire.store.egress import run_spent as _run_spent
from toolwire.store.egress import totals as _egress_totals
from toolwire.store.egress import workspace_spent as _workspace_spent
from toolwire.store.engine import errors, make_engine, resolve_url, shown
from toolwire.store.gates import (
    ADD_TO_CALL,
    GATE_COLUMNS,
    INSERT_GATE,
    GateRecord,
    addition,
    audit_query,
    gate_rows,
    split_calls,
)
from toolwire.store.hotpath import Compiled, HotPath
from toolwire.store.interrupted import CALLER_GONE, INTERRUPTED_ERROR
from toolwire.store.migrations import migrate
from toolwire.store.records import Progress, RunSummary, StoredRun
from toolwire.store.rows import is_run_id, now
from toolwire.store.statements import (
    ERASED,
    FINISH_TOTALS,
    INSERT_RUN,
    INSERT_STEP,
    SETTLE,
    SETTLE_ANSWER,
    SETTLE_HELD,
    STEP_COLUMNS,
    recorded_totals,
    settle_values,
)
from toolwire.store.writer import StepWriter
from toolwire.tools.registry import Availability

if TYPE_CHECKING:
    from toolwire.core.sealing import StateKey

__all__ = ["CALLER_GONE", "INTERRUPTED_ERROR", "Held", "RunStore"]
_runs, _gates = schema.runs, schema.gate_decisions


@dataclass(frozen=True, slots=True)
class Held:
    """A queued run this process's worker holds: its claim."""

    claim: str


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
        self._insert_egress = Compiled(INSERT_EGRESS, dialect, list(EGRESS_COLUMNS))
        self._add_to_call = Compiled(ADD_TO_CALL, dialect)
        self._waits = waiting.Waits(self._engine, self._hot)
        self._insert_run = Compiled(INSERT_RUN, dialect, list(rows.RUN_COLUMNS))
        self._settle = Compiled(SETTLE, dialect)
        self._settle_held = Compiled(SETTLE_HELD, dialect)
        self._settle_answer = Compiled(SETTLE_ANSWER, dialect)
        self._finish_totals = Compiled(FINISH_TOTALS, dialect)
        self._deciders: dict[str, str] = {}  # who decided each run's paused turn, per segment
        self._writer = StepWriter(self.encode_step, self._insert_steps)
        atexit.register(self._writer.flush)  # a store never closed still writes its last steps
        self._owner = liveness.this_process()
        self._lock = threading.Lock()
        self._last_sequence: dict[str, int] = {}
        self._held: dict[str, Held] = {}
        self._levels: dict[str, PrivacyLevel] = {}  # each recording run's own level
        self.seal_key: StateKey | None = None  # seals charters and questions in rows (seal_with)
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
        with errors("begin a run"), self._hot.transaction() as tx:
            tx.count(self._insert_run, row)
        self._levels[run_id] = self.level_of(request)
        self._cancels.watch(run_id)
        return run_id

    def level_of(self, request: RunRequest) -> PrivacyLevel:
        """The level ``request``'s run is kept at: its charter's, else this store's."""
        charter = request.charter
        if charter is not None:
            return charter.privacy
        return request.privacy or self.privacy

    def keep(self, run_id: str, charter: Charter) -> None:
        """Keep the run's later steps and its ending at its charter's level."""
        self._levels[run_id] = charter.privacy

    def seal_with(self, key: StateKey) -> None:
        """Seal each new run's charter in its row with ``key`` (the state key of the runtime
        that records here), and read back only sealed ones: a charter a re-run takes its user,
        workspace and level from is the one the run was submitted under, not one written into
        the row since. Live questions are kept only under a key (see :meth:`open_question`)."""
        self.seal_key = key

    def run_row(
        self, run_id: str, request: RunRequest, status: RunStatus = RunStatus.RUNNING
    ) -> dict[str, Any]:
        """The row a new run is inserted as: who runs it, with what provider, kept how."""
        row = rows.run_row(run_id, request, status, privacy=self.level_of(request),
                           owner=self._owner)  # fmt: skip
        charter = request.charter
        where = None if charter is None else charter.workspace_file
        return row | {"charter": self._charter_text(run_id, request),
                      "workspace": None if where is None else workspace_key(where)}  # fmt: skip

    def _charter_text(self, run_id: str, request: RunRequest) -> str | None:
        charter, key = request.charter, self.seal_key
        if charter is None:
            return None
        if key is None:
            return charter.to_json()
        from toolwire.core.sealing import CHARTER

        return key.seal(run_id, charter.to_json(), CHARTER)

    @property
    def owner(self) -> liveness.Owner:
        """This process, as a run's owner."""
        return self._owner

    def hold(self, run_id: str, claim: str, privacy: PrivacyLevel) -> None:
        """Write the queued run ``run_id`` under ``claim``, at its own ``privacy``, and watch it:
        a cancel, or another worker taking it, stops it as a cancel does."""
        with self._lock:
            self._held[run_id] = Held(claim)
        self._levels[run_id] = privacy  # until its charter is opened and kept (``keep``)
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
        """Write the outcome once, its status first (see the module); then raise if the rest
        of it, or one of the run's steps, could not be stored."""
        self._writer.flush()
        held = self.held(outcome.run_id)
        values = settle_values(outcome, self._level(outcome.run_id), finished_at=now())
        if outcome.result is None:  # every segment's calls, not just the last one's
            values |= self._recorded_totals(outcome.run_id)
        self._end_segment(outcome.run_id)
        cut_off = gate_rows(outcome.run_id, None, decisions_of_outcome(outcome), now())
        statement = self._settle if held is None else self._settle_held
        if held is not None:
            values["held_claim"] = held.claim
        with errors(f"settle run {outcome.run_id}"), self._hot.transaction() as tx:
            settled = tx.count(statement, values | {"final_answer": None}) == 1
        if settled:
            with errors(f"record how run {outcome.run_id} ended"), self._hot.transaction() as tx:
                if values["final_answer"] is not None:
                    tx.count(self._settle_answer, values)
                if cut_off:
                    tx.many(self._insert_gate, cut_off)
                tx.count(self._finish_totals, {"run_id": outcome.run_id})
                body = search.run_body(values["final_answer"], values["error"])
                if body:
                    tx.count(self._insert_text, {"run_id": outcome.run_id, "sequence": 0,
                                                 "body": body})  # fmt: skip
        self._writer.raise_failure(outcome.run_id)
        return settled

    def _recorded_totals(self, run_id: str) -> dict[str, Any]:
        """The rounds, tokens and cost of a run's stored model calls, over all its segments
        (a run that failed or was cancelled has no totals of its own); nothing without any."""
        with errors(f"read the totals of run {run_id}"), self._engine.connect() as connection:
            totals = recorded_totals(connection, run_id)
        return {} if totals["cost"] is None else totals

    def cancel_requested(self, run_id: str) -> bool:
        """True once the run was cancelled: at once through this store, else within a poll.

        Reads memory only (see :mod:`toolwire.store.cancels`): a run on an event loop checks
        this at every step and must not wait on the database.
        """
        return self._cancels.cancelled(run_id)

    def on_cancel(self, run_id: str, notify: Callable[[], object]) -> Callable[[], None]:
        """Call ``notify`` once the run is cancelled (or, held, taken by another worker): at
        once through this store, else within a poll, on the watch's thread. For a run this
        store watches (begun, claimed or held here); returns what stops listening."""
        return self._cancels.on_cancel(run_id, notify)

    def _cancelled_among(self, run_ids: Collection[str]) -> list[str]:
        """The runs cancelled, and the held ones another worker has taken since."""
        query = select(_runs.c.id, _runs.c.cancel_requested, _runs.c.claim).where(
            _runs.c.id.in_(list(run_ids))
        )
        with self._engine.connect() as connection:
            found = connection.execute(query).all()
        return [row.id for row in found if row.cancel_requested or self._lost(row.id, row.claim)]

    def _lost(self, run_id: str, claim: str | None) -> bool:
        held = self.held(run_id)
        return held is not None and claim != held.claim

    # -- waiting for a person (see toolwire.store.waiting) ----------------------------------------

    def suspend(self, run_id: str, status: RunStatus, seal: Sealer, digest: str) -> bool:
        """Move a running run to waiting with the state ``seal`` seals for the run's next
        version and last stored step (see :mod:`toolwire.store.seals`); False if a cancel won.

        A run one of whose steps could not be stored raises before it moves: its record is
        incomplete, so it fails (and settles) instead of waiting on a turn it cannot show.
        """
        self._writer.flush()
        self._writer.raise_failure(run_id)
        held = self.held(run_id)
        claim = None if held is None else held.claim
        moved = self._waits.suspend(run_id, status, seal, digest, claim=claim)
        self._end_segment(run_id)
        return moved

    def waiting(self, run_id: str) -> Waiting | None:
        """The run, with its sealed state, if it is waiting for a decision."""
        self._writer.flush()
        return self._waits.waiting(run_id)

    def claim(self, run_id: str, status: RunStatus, digest: str) -> bool:
        """Atomically take a waiting run back to running: of racing claims, one wins."""
        claimed = self._waits.claim(run_id, status, digest, self._owner)
        if claimed:
            self._cancels.watch(run_id)
        return claimed

    def hand_over(self, run_id: str, sealed: str) -> None:
        """Keep a held call's sealed answer for the caller waiting for it."""
        waiting.hand_over(self._engine, run_id, sealed)

    def take_answer(self, run_id: str) -> tuple[RunStatus, str | None] | None:
        """The run's status and, once it ended, its held answer, erased as it is taken.

        None when there is no such run."""
        return waiting.take_answer(self._engine, run_id)

    # -- live questions (see toolwire.runs.questions) ----------------------------------------

    def open_question(self, question: LiveQuestion) -> bool:
        """Put ``question`` on the board and its run in ``awaiting_input``; False if the run
        is not running, or this store has no key to seal its words with (then it is asked
        only where the run is carried out)."""
        key = self.seal_key
        if key is None:  # nothing of a question is kept in clear: it is asked where it runs
            return False
        self._writer.flush()  # the steps before the question are the run's, in order
        return questions.open_question(self._engine, key, question)

    def question_answer(self, run_id: str, question_id: str) -> StoredAnswer | Gone | None:
        """The question's answer; None while it has none, ``"gone"`` off the board. A question
        gone because its run was cancelled marks the cancel here at once, so the run stops at
        its next step boundary rather than after the watch's next poll."""
        found = questions.question_answer(self._engine, self._question_key(), run_id, question_id)
        if found == "gone":
            with errors(f"read run {run_id}"):
                if run_id in self._cancelled_among((run_id,)):
                    self._cancels.mark(run_id)
        return found

    def write_answer(self, run_id: str, question_id: str, answer: StoredAnswer) -> bool:
        """Write ``answer`` once, while the question is open and not expired."""
        return questions.write_answer(
            self._engine, self._question_key(), run_id, question_id, answer
        )

    def close_question(self, run_id: str, question_id: str) -> None:
        """Take the question off the board; its run is running again once none is open."""
        questions.close_question(self._engine, run_id, question_id)

    def open_questions(self, run_id: str | None = None) -> list[LiveQuestion]:
        """The open questions (of ``run_id``) of runs waiting on them, oldest first. A run
        whose process died meanwhile is interrupted first (see ``mark_interrupted``)."""
        found = questions.open_questions(self._engine, self.seal_key, run_id)
        if found and self.mark_interrupted():
            found = questions.open_questions(self._engine, self.seal_key, run_id)
        return found

    def _question_key(self) -> StateKey:
        """The key the questions' words and answers are sealed with; ``StoreError`` when this
        process has none (it can then neither read nor answer them)."""
        if self.seal_key is None:
            raise StoreError(questions.NO_KEY)
        return self.seal_key

    def asking(self, run_id: str) -> bool:
        """Whether the run waits on a live question, in a process still alive (a dead one's
        run is interrupted here)."""
        owner = questions.asker(self._engine, run_id)
        if owner is None:
            return False
        if liveness.is_dead(owner):
            self.mark_interrupted()
            return False
        return True

    # -- operating ----------------------------------------------------------------------------

    def request_cancel(self, run_id: str) -> bool:
        """Cancel a running or waiting run; True if it was one. The cancel wins.

        A running run stops at its next step boundary and its runtime settles the totals; a
        waiting or queued run is settled here. Every sealed value of the run is erased.
        """
        if not is_run_id(run_id):
            return False
        # A run waiting on a live question is settled by its process, as a running one is.
        running = or_(_runs.c.status == RunStatus.RUNNING.value, questions.LIVE_QUESTION)
        statement = (
            update(_runs)
            .where(_runs.c.id == run_id, _runs.c.status.in_(as_strings(CANCELLABLE)))
            .values(
                cancel_requested=True,
                status=RunStatus.CANCELLED.value,
                finished_at=now(),
                settled=case((running, false()), else_=true()),
                termination_reason=case((running, None), else_="cancelled"),
                **ERASED,
            )
        )
        with errors(f"cancel run {run_id}"), self._engine.begin() as connection:
            cancelled = connection.execute(statement).rowcount == 1
            if cancelled:
                connection.execute(FINISH_TOTALS, {"run_id": run_id})
                questions.drop_questions(connection, run_id)
        if cancelled:
            self._cancels.mark(run_id)
        return cancelled

    def purge(self, *, older_than_days: float) -> int:
        """Delete finished runs created more than ``older_than_days`` ago; return how many."""
        self._writer.flush()
        return purge.purge(self._engine, older_than_days)

    def mark_interrupted(self) -> int:
        """Mark runs whose owning process died on this host ``interrupted``; return how many.

        Their rounds, tokens and cost are what their stored model calls say. A held call
        waiting for a caller that died is interrupted too: nobody would get its answer.
        """
        return interrupted.mark_interrupted(self._engine, self._owner)

    # -- reading (see toolwire.store.reading) -------------------------------------------------

    def list_runs(
        self, *, limit: int = 50, offset: int = 0, waiting: bool = False
    ) -> list[RunSummary]:
        """Runs, newest first; only those waiting for a person when ``waiting``."""
        query = RunQuery(limit=limit, offset=offset, waiting=waiting)
        page: list[RunSummary] = self.find_runs(query, total=False).runs
        return page

    def find_runs(self, query: RunQuery, *, total: bool = True) -> RunPage:
        """One page of the runs ``query`` asks for, and (with ``total``) how many match."""
        self._writer.flush()
        return reading.find_runs(self._engine, query, total=total)

    def neighbours(self, query: RunQuery, run_id: str) -> Neighbours | None:
        """The runs before and after run ``run_id`` in the listing ``query`` asks for, its
        place there and the listing's size; None without such a run."""
        self._writer.flush()
        return reading.neighbours(self._engine, query, run_id)

    def facets(self) -> dict[str, list[str]]:
        """The values each filter of the runs browser can take (at most ``MAX_FACETS`` each)."""
        return reading.facets(self._engine)

    def first_requests(self, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The first stored request step of each of ``run_ids`` that has one."""
        self._writer.flush()
        return reading.first_requests(self._engine, run_ids)

    def export(self, query: RunQuery) -> Iterator[StoredRun]:
        """Every run ``query`` matches, oldest first, each with its steps; read in batches."""
        self._writer.flush()
        yield from reading.export(self._engine, query)

    def charter_of(self, run_id: str) -> Charter | None:
        """The charter the run ``run_id`` was submitted under; None for a run stored before
        charters, or no such run. ``StoreError`` for one that cannot be trusted: sealed and no
        key here to open it, changed since, or plain in a store that seals charters. (A
        waiting run's sealed state holds the copy its resume uses.)"""
        if not is_run_id(run_id):
            return None
        query = select(_runs.c.charter).where(_runs.c.id == run_id)
        with errors(f"read run {run_id}"), self._engine.connect() as connection:
            text = connection.execute(query).scalar()
        if not text:
            return None
        try:
            return Charter.from_dict(json.loads(self._opened_charter(run_id, text)))
        except ValueError:
            raise StoreError(f"the charter of run {run_id} cannot be read") from None

    def _opened_charter(self, run_id: str, text: str) -> str:
        key, plain = self.seal_key, text.startswith("{")
        if plain and key is None:
            return text
        if plain:
            raise StoreError(
                f"the charter of run {run_id} is not sealed, though this store seals "
                "charters: it was stored without a state key, or changed"
            )
        if key is None:
            raise StoreError(f"the charter of run {run_id} is sealed: no state key here opens it")
        from toolwire.core.errors import StateError
        from toolwire.core.sealing import CHARTER

        try:
            return key.open(run_id, text, CHARTER)
        except StateError:
            raise StoreError(
                f"the charter of run {run_id} cannot be opened: it was changed, or sealed "
                "under another key"
            ) from None

    def ids_starting(self, prefix: str) -> list[str]:
        """Up to 100 run ids that begin with ``prefix``."""
        return reading.ids_starting(self._engine, prefix)

    def get_run(self, run_id: str) -> StoredRun | None:
        """One run with its stored steps, or None if there is no such run."""
        self._writer.flush()
        return reading.get_run(self._engine, run_id)

    def list_gate_decisions(
        self,
        *,
        since: datetime | None = None,
        gate: Gate | None = None,
        tool: str | None = None,
        reason: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[GateRecord]:
        """The governance log, newest first: every gate decision that refused or changed
        something, matching each filter given (see :mod:`toolwire.loop.governance`)."""
        if run_id is not None and not is_run_id(run_id):
            return []
        query = audit_query(since=since, gate=gate, tool=tool, reason=reason, run_id=run_id,
                            limit=limit, offset=offset)  # fmt: skip
        self._writer.flush()
        return reading.gate_records(self._engine, query)

    def egress(
        self,
        *,
        run_id: str | None = None,
        by: Sequence[Group] = ("provider", "tool", "data_class", "label"),
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[EgressTotal]:
        """The egress ledger (see :mod:`toolwire.store.egress`): bytes of tool output sent,
        summed per ``by``, of one run or of every run in ``[since, until)``."""
        self.flush()
        if run_id is not None and not is_run_id(run_id):
            return []
        return _egress_totals(self._engine, by=by, run_id=run_id, since=since, until=until)

    def egress_spent(self, run_id: str) -> int:
        """The bytes of tool output ``run_id`` has sent so far (what its limit counts)."""
        self.flush()
        return _run_spent(self._engine, run_id) if is_run_id(run_id) else 0

    def refused_calls(self, run_id: str) -> frozenset[str]:
        """The calls of ``run_id`` the runtime answered itself, by id as stored."""
        self.flush()
        return _refused_calls(self._engine, run_id) if is_run_id(run_id) else frozenset()

    def workspace_egress(
        self, workspace: str, *, since: datetime | None = None, excluding: str | None = None
    ) -> int:
        """The bytes of tool output every run of ``workspace`` (its key: see
        :func:`toolwire.policy.egress.workspace_key`) sent since ``since``, but ``excluding``'s."""
        self.flush()
        return _workspace_spent(self._engine, workspace, since=since, excluding=excluding)

    def progress(self, run_id: str, after: int = 0) -> Progress | None:
        """The run, and its steps stored after sequence ``after``; None without such a run.
        (For following a run executed elsewhere: another process, or a queue worker.)"""
        self._writer.flush()
        return reading.progress(self._engine, run_id, after)

    # -- tool availability (see toolwire.store.availability) ----------------------------------

    def load_availability(self) -> Availability:
        return availability.load(self._engine)

    def set_tool_state(self, name: str, enabled: bool | None) -> None:
        """Override a tool's state; None removes the override."""
        availability.set_state(self._engine, schema.tool_state, "tool", name, enabled)

    def set_group_state(self, name: str, enabled: bool | None) -> None:
        """Override a group's state; None removes the override."""
        availability.set_state(self._engine, schema.tool_group_state, "group", name, enabled)

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

    # -- writing steps ------------------------------------------------------------------------

    def encode_step(self, run_id: str, sequence: int, step: RunStep) -> dict[str, Any]:
        """The row of one step, filtered at the run's level (a held run's own, else the
        store's), with the governance rows derived from what the filter kept (writer thread)."""
        kept = filter_run_step(step, self._level(run_id))
        decider = decider_of(kept)
        if decider is not None:
            self._deciders[run_id] = decider
        return rows.step_row(run_id, sequence, step, kept, self._deciders.get(run_id))

    step_row = staticmethod(rows.step_row)
    insert_step = staticmethod(rows.insert_step)

    def _insert_steps(self, batch: list[Mapping[str, Any]]) -> None:
        gates, texts, sent = rows.beside(batch)
        fresh, calls = split_calls(gates)
        if not calls:
            self._hot.execute_many(
                self._insert_step, batch, (self._insert_gate, fresh), (self._insert_text, texts),
                (self._insert_egress, sent),
            )  # fmt: skip
            return
        with self._hot.transaction() as tx:  # a call refused again adds to the run's row
            tx.many(self._insert_step, batch)
            fresh += [call for call in calls if not tx.count(self._add_to_call, addition(call))]
            if fresh:
                tx.many(self._insert_gate, fresh)
            if texts:
                tx.many(self._insert_text, texts)
            if sent:
                tx.many(self._insert_egress, sent)

    def _claim_sequence(self, run_id: str, sequence: int) -> None:
        with self._lock:
            last = self._last_sequence.get(run_id, 0)
            if sequence <= last:
                raise StoreError(
                    f"step sequence {sequence} of run {run_id} is not after the last one ({last})"
                )
            self._last_sequence[run_id] = sequence

    def _level(self, run_id: str) -> PrivacyLevel:
        """The run's own level (dict reads are atomic: no lock on the writer's path). A run
        this process did not begin, resume or hold is never recorded here; the store's level
        is the fail-safe for one that is (a settle of a run that failed to start)."""
        return self._levels.get(run_id, self.privacy)

    def _end_segment(self, run_id: str) -> None:
        """Forget what this process tracked of the run's segment (it settled or waits)."""
        self._levels.pop(run_id, None)
        with self._lock:
            self._last_sequence.pop(run_id, None)
        self._deciders.pop(run_id, None)
        self._cancels.forget(run_id)
