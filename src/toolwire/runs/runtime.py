"""The run lifecycle around the loop: record, cancel, suspend, resume, settle.

For every run (and every resumed segment of one): the recorder (the audit store) holds a row;
each step goes first to the live observers, then to the recorder; a segment ends by settling
the run exactly once, or by suspending it. Statuses and their rules live in
:mod:`toolwire.core.lifecycle`; this module decides which one applies. The run's values (request,
outcome, decision) live in :mod:`toolwire.loop.run`, the recorder in
:mod:`toolwire.runs.recorder`, a decision's checks in :mod:`toolwire.runs.resume`; their names
stay importable from here.

- A recorder failure never breaks a run: it is logged and reported on the outcome. But a
  suspension that cannot be stored (no state key, a store error, a cancel that won) fails the
  run: a resume that can never happen is not promised.
- A cancel aborts the segment's task, and with it an in-flight provider or tool call: at once
  for one made through this runtime, within the store's poll for one made in another process
  (the recorder tells the segment, see ``Recording.on_cancel``); a recorder that cannot tell
  is asked at every step boundary (an observer raises ``RunCancelled``). The steps recorded
  before the cancel are the run's. A waiting run is cancelled in the store.
- A resume checks the decision (its turn digest, its kind, a person's input against the
  tool's schema) before anything changes, then claims the run atomically: of two racing
  resumes, in one process or two, one runs the pending turn and the other gets
  ``StaleDecision``.
- No database call blocks the event loop: the recorder's blocking calls run in a thread;
  ``record_step`` only queues.
- A direct call may be held for a person (see :mod:`toolwire.runs.held`): whoever decides runs it
  with its caller's user and workspace and hands the answer over to the caller in the store.
- Telemetry (:mod:`toolwire.telemetry`) watches a segment only when it is configured: then it
  sees every step and the segment's end; otherwise nothing is attached.
- A queued run (:mod:`toolwire.queue`) is executed by workers, which carry it on with
  ``carry_on``; a decision on it is queued, never resumed in the deciding process.
- A segment runs in a task of its own, so whether its run has the event loop to itself (where
  a synchronous tool may run: :func:`toolwire.loop.seam.may_block_loop`) is asked where the
  segment is entered, before that task exists: ``run_sync`` and ``asyncio.run(runtime.run(...))``
  do; the inspector's, an MCP server's and a worker's loop do not.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from toolwire.core.egress import EgressUnread
from toolwire.core.errors import (
    DecisionError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    RunCancelled,
    StaleDecision,
    StateError,
    StoreError,
)
from toolwire.core.lifecycle import RUN_FAILED, RunStatus, settled_status
from toolwire.core.messages import ChatMessage, ToolCall
from toolwire.core.sealing import Binding, StateKey, require
from toolwire.loop.loop import Checkpoint, LoopResult, ToolLoop
from toolwire.loop.run import (
    DIRECT_CALL,
    DirectCall,
    OperatorDecision,
    ProviderFactory,
    RunOutcome,
    RunRequest,
    provider_from_ref,
)
from toolwire.loop.seam import Seam, sole_task
from toolwire.loop.state import Pause, RunState
from toolwire.policy.charter import (
    Charter,
    ProviderRef,
    check_context,
    check_operator,
    check_provider,
    servers_of,
)
from toolwire.policy.charter import context as tool_context
from toolwire.policy.egress import limited, workspace_key
from toolwire.policy.options import RunOptions
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.trace import DeltaObserver, Observer, RunTrace
from toolwire.providers.base import Provider
from toolwire.runs.held import CallAnswer, await_answer, hand_over, record_undecided
from toolwire.runs.questions import board_of, on_board
from toolwire.runs.recorder import (
    STORE_FAILED,
    MemoryRecorder,
    Recording,
    RunRecorder,
    Waiting,
    require_recorder,
)
from toolwire.runs.resume import (
    QUEUED_RUN,
    Checked,
    chartered,
    check_decision,
    open_state,
    operator_of,
    waiting_run,
)
from toolwire.telemetry import (
    Carried,
    RunTelemetry,
    Segment,
    SegmentWatch,
    from_environment,
    span_of,
    watch_segment,
)
from toolwire.tools.api import ToolContext
from toolwire.tools.policy import ToolPolicy
from toolwire.tools.registry import ToolRegistry

__all__ = [
    "DIRECT_CALL",
    "QUEUED_RUN",
    "STORE_FAILED",
    "Checked",
    "DirectCall",
    "LoopSegment",
    "MemoryRecorder",
    "OperatorDecision",
    "ProviderFactory",
    "ProviderRef",
    "RunOutcome",
    "RunRecorder",
    "RunRequest",
    "RunStatus",
    "Runtime",
    "Waiting",
    "provider_from_ref",
]

log = logging.getLogger("toolwire.runtime")
LoopSegment = Callable[[ToolLoop, RunTrace], Coroutine[Any, Any, LoopResult]]


class Runtime:
    """Runs requests through the loop, with recording, cancellation, suspension and settling."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        recorder: RunRecorder | None = None,
        policy: ToolPolicy | None = None,
        state_key: StateKey | None = None,
        provider_factory: ProviderFactory = provider_from_ref,
        telemetry: RunTelemetry | None = None,
        must_record: bool = False,
    ) -> None:
        """``telemetry``: spans and metrics of runs; by default as the ``OTEL_*`` environment
        configures them (and none when it does not). ``must_record``: a run whose row the
        recorder cannot begin does not start (``run`` raises its ``StoreError``)."""
        self.registry = registry
        self.must_record = must_record
        self.recorder: RunRecorder = require_recorder(recorder or MemoryRecorder())
        self._board = board_of(self.recorder)  # where a live question waits for any process
        seal_with = getattr(self.recorder, "seal_with", None)
        if state_key is not None and callable(seal_with):  # the store seals what it keeps
            seal_with(state_key)
        # The level of the runs submitted here (a request may name its own); a run carried
        # on here keeps its charter's, whatever this process's store says.
        self.privacy: PrivacyLevel = getattr(recorder, "privacy", PrivacyLevel.METADATA)
        if telemetry is None:
            telemetry = from_environment()
        self.telemetry = telemetry
        self.policy = policy or ToolPolicy(registry)
        self.state_key = state_key
        self.provider_factory = provider_factory
        self._lock = threading.Lock()
        self._cancelled: set[str] = set()
        self._tasks: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Task[LoopResult]]] = {}

    def run_sync(
        self,
        request: RunRequest,
        *,
        observers: Sequence[Observer] = (),
        deltas: Sequence[DeltaObserver] = (),
    ) -> RunOutcome:
        return asyncio.run(self.run(request, observers=observers, deltas=deltas))

    async def run(
        self,
        request: RunRequest,
        *,
        observers: Sequence[Observer] = (),
        on_start: Callable[[str], None] | None = None,
        deltas: Sequence[DeltaObserver] = (),
    ) -> RunOutcome:
        """Run one request. ``on_start`` gets the run id before the first step; ``deltas``
        get the pieces of each streamed answer as they arrive (for a live view)."""
        started = time.perf_counter()
        exclusive = sole_task()  # asked before the segment's own task exists
        request, run, trace, watch = await self._submit(request, "run", on_start, observers,
                                                        deltas)  # fmt: skip
        assert request.charter is not None
        _window(trace, self.recorder, run.run_id, request.charter.workspace_file)
        loop = ToolLoop(request.provider, self.registry, policy=self.policy)
        segment = loop.run(request.messages, context=request.context, options=request.options,
                           trace=trace, run_id=run.run_id, charter=request.charter,
                           exclusive=exclusive)  # fmt: skip
        return await self._drive(run, trace, segment, started, watch=watch)

    async def _submit(
        self,
        request: RunRequest,
        segment: Segment,
        on_start: Callable[[str], None] | None,
        observers: Sequence[Observer],
        deltas: Sequence[DeltaObserver] = (),
    ) -> tuple[RunRequest, Recording, RunTrace, SegmentWatch | None]:
        """A new run's first segment set up: its charter made, its row begun, its trace."""
        request = request.chartered(self.privacy, servers_of(self.registry))
        assert request.charter is not None
        run = Recording(self.recorder, required=self.must_record)
        await asyncio.to_thread(run.begin, request)
        if on_start is not None:
            on_start(run.run_id)
        watch = self._watch(run.run_id, request.charter, segment)
        return request, run, self._trace(run, request.options, observers, deltas, watch), watch

    def resume_sync(
        self,
        run_id: str,
        decision: OperatorDecision,
        *,
        observers: Sequence[Observer] = (),
        provider: Provider | None = None,
        context: ToolContext | None = None,
        deltas: Sequence[DeltaObserver] = (),
    ) -> RunOutcome:
        resumed = self.resume(
            run_id, decision, observers=observers, provider=provider, context=context, deltas=deltas
        )
        return asyncio.run(resumed)

    async def resume(
        self,
        run_id: str,
        decision: OperatorDecision,
        *,
        observers: Sequence[Observer] = (),
        provider: Provider | None = None,
        context: ToolContext | None = None,
        on_start: Callable[[str], None] | None = None,
        deltas: Sequence[DeltaObserver] = (),
    ) -> RunOutcome:
        """Apply ``decision`` to the waiting run ``run_id`` and carry the run on.

        ``on_start`` is called once the run is claimed, before its first step; an error
        raised before that left the run as it was.

        Raises ``DecisionError`` (nothing changed, nothing ran) for a run that is not waiting
        for this decision, a stale digest, a lost race or input that does not fit; and
        ``StateError`` when the sealed state cannot be opened.
        """
        started = time.perf_counter()
        exclusive = sole_task()  # asked before the segment's own task exists
        claimed = await asyncio.to_thread(self._claim, run_id, decision, context, provider)
        checked, segment_context, provider = claimed
        waiting, state, values = checked.waiting, checked.state, checked.values
        charter = chartered(state)
        held = _held_tool(state) if waiting.provider.name == DIRECT_CALL else None
        self.recorder.keep(run_id, charter)
        if on_start is not None:
            on_start(run_id)
        run = Recording(self.recorder, run_id=run_id, sequence=waiting.next_sequence - 1)
        watch = self._watch(run_id, charter, "resume", before=carried(state))
        trace = self._trace(run, state.options, observers, deltas, watch)
        if limited(state.options.max_egress_bytes, segment_context.workspace):
            # what its limit counts: every earlier segment's bytes, in whichever process
            trace.egress_spent = await asyncio.to_thread(_egress_spent, self.recorder, run_id)
            _window(trace, self.recorder, run_id, charter.workspace_file)
        if trace.keeps:  # the ledger labels what earlier segments refused as the runtime's
            trace.egress_refused = await asyncio.to_thread(_refused_calls, self.recorder, run_id)
        trace.record_decision(state.rounds, decision.action, decision.actor, decision.reason,
                              decision.digest)  # fmt: skip
        loop = ToolLoop(provider, self.registry, policy=self.policy)
        approved = decision.action == "approve"
        if held is not None:
            segment = loop.resume_call(state, approved=approved, values=values,
                                       context=segment_context, trace=trace,
                                       exclusive=exclusive)  # fmt: skip
        else:
            segment = loop.resume(state, approved=approved, values=values,
                                  context=segment_context, trace=trace, run_id=run_id,
                                  exclusive=exclusive)  # fmt: skip
        return await self._drive(run, trace, segment, started, held=held, watch=watch)

    async def carry_on(
        self,
        run_id: str,
        segment: LoopSegment,
        *,
        provider: Provider,
        charter: Charter,
        sequence: int,
        checkpoint: Checkpoint | None = None,
        observers: Sequence[Observer] = (),
        resumed: Carried | None = None,
    ) -> RunOutcome:
        """Carry on a run the recorder already holds (a queued run, in a worker).

        ``segment(loop, trace)`` starts the loop where the run stands: a fresh request, the
        round after a checkpoint, or a decided turn. ``sequence`` is the run's last stored
        step; ``checkpoint`` keeps the run's progress as it goes. Every step is kept and
        exported at ``charter``'s privacy level. ``resumed``: where a paused run stood when a
        person decided its turn (its telemetry is then a resumed segment's).
        """
        started = time.perf_counter()
        self.recorder.keep(run_id, charter)
        run = Recording(self.recorder, run_id=run_id, sequence=sequence)
        segment_of: Segment = "run" if resumed is None else "resume"
        watch = self._watch(run_id, charter, segment_of, before=resumed)
        trace = self._trace(run, charter.options, observers, watch=watch)
        limited = charter.options.max_egress_bytes is not None or charter.workspace_file
        if sequence and limited:  # carried on: what a limit counts includes earlier segments
            trace.egress_spent = await asyncio.to_thread(_egress_spent, self.recorder, run_id)
        _window(trace, self.recorder, run_id, charter.workspace_file)
        if sequence and trace.keeps:
            trace.egress_refused = await asyncio.to_thread(_refused_calls, self.recorder, run_id)
        loop = ToolLoop(provider, self.registry, policy=self.policy, checkpoint=checkpoint)
        return await self._drive(run, trace, segment(loop, trace), started, watch=watch)

    async def call(
        self,
        call: ToolCall,
        *,
        context: ToolContext,
        offered: frozenset[str],
        observers: Sequence[Observer] = (),
        options: RunOptions | None = None,
        hold: bool = False,
        caller: str | None = None,
        on_start: Callable[[str], None] | None = None,
    ) -> RunOutcome:
        """One tool call without a model, as a one-step run (provider ``direct call``).

        An operator's call reads the same data a model's would: it is recorded like any run.
        With ``hold``, a call that needs a person waits for one: the outcome is the waiting
        run, whose answer :meth:`await_answer` brings (see :mod:`toolwire.runs.held`). ``caller``
        names who called, in the run's prompt; ``options`` carry its trust zone.
        """
        started = time.perf_counter()
        exclusive = sole_task()  # asked before the segment's own task exists
        source = f" from {caller}" if caller else ""
        request = RunRequest(
            messages=(ChatMessage.user(f"direct call of {call.name}{source}"),),
            provider=DirectCall(),
            options=options or RunOptions(),
            context=context,
        )
        request, run, trace, watch = await self._submit(request, "call", on_start, observers)
        loop = ToolLoop(request.provider, self.registry, policy=self.policy)
        segment = loop.call(call, offered=offered, context=context, trace=trace,
                            options=request.options, hold=hold, run_id=run.run_id,
                            charter=request.charter, exclusive=exclusive)  # fmt: skip
        return await self._drive(run, trace, segment, started, watch=watch)

    async def await_answer(self, run_id: str, name: str, *, decision_seconds: float) -> CallAnswer:
        """The answer of the held call ``run_id`` (of tool ``name``) once it was decided and
        ran; a run still undecided after ``decision_seconds`` is ended, its call refused."""

        async def expire() -> bool:
            return await asyncio.to_thread(self._expire, run_id, decision_seconds)

        return await await_answer(self.recorder, self.state_key, run_id, name,
                                  decision_seconds=decision_seconds, expire=expire)  # fmt: skip

    def _expire(self, run_id: str, seconds: float) -> bool:
        """End the held call ``run_id`` nobody decided within ``seconds``: claimed like a
        decision (of racing deciders, one wins), its call recorded refused, the run cancelled.
        False when it was decided or cancelled meanwhile. A state that cannot be opened is
        cancelled in the store, with no step (there is no call to record)."""
        started = time.perf_counter()
        waiting = self.recorder.waiting(run_id)
        if waiting is None:
            return False
        try:
            state = open_state(self.state_key, waiting)
        except StateError:
            state = None
        if state is None or state.pause is None:
            log.warning("held run %s: its state cannot be opened; it is cancelled", run_id)
            return self.recorder.request_cancel(run_id)
        if not self.recorder.claim(run_id, waiting.status, waiting.digest):
            return False
        charter = chartered(state)
        self.recorder.keep(run_id, charter)
        run = Recording(self.recorder, run_id=run_id, sequence=waiting.next_sequence - 1)
        watch = self._watch(run_id, charter, "resume", before=carried(state))
        trace = RunTrace(capture_raw=state.options.capture_raw)
        trace.subscribe(run.record_step)
        if watch is not None:
            trace.subscribe(watch.step)
        record_undecided(trace, state.pause, seconds, Seam(self.registry).knows)
        wall_ms = (time.perf_counter() - started) * 1000
        outcome = run.settle(RunOutcome(run_id=run_id, status=RunStatus.CANCELLED, result=None,
                                        steps=tuple(trace.steps), wall_ms=wall_ms))  # fmt: skip
        if watch is not None:
            watch.end(outcome, None)
        return True

    def workspace_of(self, run_id: str) -> str | None:
        """The workspace file the waiting run ``run_id``'s tools were given, if any."""
        return self.suspended(run_id).workspace

    def charter_of(self, run_id: str) -> Charter:
        """The charter of the waiting run ``run_id``; ``RunNotWaiting`` or ``StateError``."""
        return chartered(self.suspended(run_id))

    def pending(self, run_id: str) -> Pause:
        """What the waiting run ``run_id`` waits on; ``RunNotWaiting`` or ``StateError``."""
        pause = self.suspended(run_id).pause
        assert pause is not None
        return pause

    def suspended(self, run_id: str) -> RunState:
        """The sealed state of the waiting run ``run_id``; ``RunNotWaiting`` or ``StateError``."""
        return open_state(self.state_key, waiting_run(self.recorder, run_id))

    def cancel(self, run_id: str) -> bool:
        """Ask a running run of this process to stop; True if there was one."""
        with self._lock:
            entry = self._tasks.get(run_id)
            if entry is None:
                return False
            self._cancelled.add(run_id)
        loop, task = entry
        loop.call_soon_threadsafe(task.cancel)
        return True

    def cancel_anywhere(self, run_id: str) -> bool:
        """Cancel a run running here, or a running or waiting run in the store."""
        return self.cancel(run_id) or self.recorder.request_cancel(run_id)

    def running(self) -> list[str]:
        with self._lock:
            return list(self._tasks)

    # -- one segment ---------------------------------------------------------------------------

    def _trace(
        self,
        run: Recording,
        options: RunOptions,
        observers: Sequence[Observer],
        deltas: Sequence[DeltaObserver] = (),
        watch: SegmentWatch | None = None,
    ) -> RunTrace:
        trace = RunTrace(
            capture_raw=options.capture_raw, observers=observers, delta_observers=deltas
        )
        trace.subscribe(run.record_step)  # the step that meets a cancel is still recorded
        if watch is not None:
            trace.subscribe(watch.step)
        trace.subscribe(partial(self._check_cancel, run))  # a partial: no frame of its own
        # without a state key no pause can be stored: an egress limit that would ask stops
        trace.egress_can_wait = self.state_key is not None
        return trace

    def _watch(
        self, run_id: str, charter: Charter, segment: Segment, before: Carried | None = None
    ) -> SegmentWatch | None:
        """The segment's telemetry, at its run's privacy level (``before``: where a resumed
        run stood)."""
        if self.telemetry is None:
            return None
        return watch_segment(self.telemetry, run_id, charter.provider, charter.options, segment,
                             privacy=charter.privacy, before=before,
                             tools=self.registry.specs)  # fmt: skip

    async def _drive(
        self,
        run: Recording,
        trace: RunTrace,
        segment: Coroutine[Any, Any, LoopResult],
        started: float,
        *,
        held: str | None = None,
        watch: SegmentWatch | None = None,
    ) -> RunOutcome:
        """Run one segment to its end and settle it (or suspend it). ``held`` names the tool of
        a held call, whose answer is handed over to its caller before the run settles."""
        with on_board(self._board):  # the segment's live questions (copied into its task)
            task = asyncio.ensure_future(segment)
        self._track(run.run_id, task)
        stop_listening = run.on_cancel(lambda: self.cancel(run.run_id))
        result: LoopResult | None = None
        error: str | None = None
        failure: Exception | None = None
        try:
            result = await task
            status = settled_status(result.reason)
        except (RunCancelled, asyncio.CancelledError):
            if not self._forget_cancel(run.run_id) and _outer_cancelled():
                if watch is not None:
                    watch.end(None, None)
                raise
            status = RunStatus.CANCELLED
        except ProviderError as exc:
            log.warning("run %s: provider failed: %s", run.run_id, exc)
            status, error, failure = RunStatus.FAILED, _provider_error_text(exc), exc
        except EgressUnread as exc:  # its text is fixed: it names no store, no secret
            status, error, failure = RunStatus.FAILED, str(exc), exc
        except Exception as exc:
            log.exception("run %s failed", run.run_id)
            status, error, failure = RunStatus.FAILED, RUN_FAILED, exc
        finally:
            stop_listening()
            self._untrack(run.run_id)
        if result is not None and result.suspended is not None:
            status, error = await asyncio.to_thread(self._suspend, run, result.suspended,
                                                    span_of(watch))  # fmt: skip
        outcome = RunOutcome(
            run_id=run.run_id,
            status=status,
            result=result,
            steps=tuple(trace.steps),
            wall_ms=(time.perf_counter() - started) * 1000,
            error=error,
        )
        if status.waiting:
            outcome = run.report(outcome)
        else:
            if held is not None and run.begun:
                await asyncio.to_thread(hand_over, self.state_key, run, outcome, held)
            outcome = await asyncio.to_thread(run.settle, outcome)
        if watch is not None:
            watch.end(outcome, failure)
        return outcome

    def _suspend(
        self, run: Recording, state: RunState, span: str | None = None
    ) -> tuple[RunStatus, str | None]:
        """Seal and store the paused state (its charter with it, and ``span``, the segment's
        telemetry span, for the next segment to link to); a run that cannot wait fails
        instead."""
        pause = state.pause
        assert pause is not None
        if span is not None:
            pause = dataclasses.replace(pause, span=span)
            state = state._replace(pause=pause)
        try:
            key = require(self.state_key)
        except StateError as exc:
            return RunStatus.FAILED, f"the run could not be suspended: {exc}"
        if not run.begun:
            return RunStatus.FAILED, f"the run could not be suspended: {STORE_FAILED}"
        text = state.to_json()

        def seal(binding: Binding) -> str:  # bound to the run's next version by the recorder
            return key.seal(run.run_id, text, binding=binding)

        stored = run.guard(lambda: self.recorder.suspend(run.run_id, pause.status, seal,
                                                         pause.digest), None)  # fmt: skip
        if stored is None:
            return RunStatus.FAILED, f"the run could not be suspended: {STORE_FAILED}"
        if not stored:
            return RunStatus.CANCELLED, None
        return pause.status, None

    def _claim(
        self,
        run_id: str,
        decision: OperatorDecision,
        lent: ToolContext | None,
        provider: Provider | None,
    ) -> tuple[Checked, ToolContext, Provider]:
        """Check the decision, make the segment's tool context and provider from the run's
        charter, then claim the run (in one hop off the loop: all of it reads files or the
        store). Anything refused before the claim leaves the run as it was."""
        checked = self.check(run_id, decision)
        if checked.waiting.queued:
            raise DecisionError(QUEUED_RUN)
        charter = chartered(checked.state)
        lent = None if lent is None else check_context(charter, lent)
        context = tool_context(charter, run_id=run_id, lent=lent)
        if checked.waiting.provider.name == DIRECT_CALL:  # a held call has no model
            provider = DirectCall()
        elif provider is not None:
            check_provider(charter, provider)
        else:
            provider = self.provider_factory(charter.provider)
        waiting = checked.waiting
        if not self.recorder.claim(run_id, waiting.status, waiting.digest):
            raise StaleDecision("another decision on this turn was taken first")
        return checked, context, provider

    def check(self, run_id: str, decision: OperatorDecision) -> Checked:
        """Everything about a decision that can be checked before the run changes.

        Raises ``DecisionError`` or ``StateError``, as ``resume`` does."""
        waiting = waiting_run(self.recorder, run_id)
        checked = check_decision(waiting, open_state(self.state_key, waiting), decision,
                                 self.registry)  # fmt: skip
        if not waiting.queued:  # a queued run's decision is checked where it is queued
            check_operator(chartered(checked.state), operator_of(decision))
        return checked

    def _check_cancel(self, run: Recording, step: object = None) -> None:
        """Raise ``RunCancelled`` when the run was cancelled here or (its recorder says) in
        another process; after every step (``step``, unread)."""
        with self._lock:
            flagged = run.run_id in self._cancelled
        if flagged or run.cancel_requested():
            with self._lock:
                self._cancelled.add(run.run_id)
            raise RunCancelled(f"run {run.run_id} was cancelled")

    def _track(self, run_id: str, task: asyncio.Task[LoopResult]) -> None:
        with self._lock:
            self._tasks[run_id] = (asyncio.get_running_loop(), task)

    def _untrack(self, run_id: str) -> None:
        with self._lock:
            self._tasks.pop(run_id, None)
            self._cancelled.discard(run_id)  # a cancel that came after the segment's end

    def _forget_cancel(self, run_id: str) -> bool:
        with self._lock:
            was = run_id in self._cancelled
            self._cancelled.discard(run_id)
            return was


def carried(state: RunState) -> Carried:
    """Where a paused run stands, for the telemetry of the segment that carries it on."""
    usage = state.usage
    return Carried(rounds=state.rounds, input_tokens=usage.prompt_tokens,
                   output_tokens=usage.completion_tokens, cost=float(state.cost.usd),
                   cost_complete=state.cost.complete,
                   previous=None if state.pause is None else state.pause.span)  # fmt: skip


def _held_tool(state: RunState) -> str:
    """The tool a held call's paused state waits to run."""
    return state.pause.calls[0].name if state.pause and state.pause.calls else ""


def _outer_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _provider_error_text(exc: ProviderError) -> str:
    """What the run's stored error says of a provider failure: the HTTP layer's own message
    (class and status, endpoint, the server's code/type/param and a short excerpt of its
    message). Every part of it was bounded and redacted where it was built
    (``toolwire.providers.http``: key masked, no query, no user info)."""
    if isinstance(exc, ProviderConnectionError | ProviderTimeout) and not exc.body:
        return f"the provider call failed: {exc}"
    if exc.endpoint is not None:
        return f"the provider call failed: {type(exc).__name__}: {exc}"
    status = f" (HTTP {exc.status})" if exc.status else ""
    return f"the provider call failed: {type(exc).__name__}{status}"


# Why a run of a workspace with an egress limit stops when its store cannot say the total.
WORKSPACE_EGRESS_UNREAD = (
    "the workspace's egress could not be read from the run store, so "
    "no more tool output is sent under its limit"
)


def _window(trace: RunTrace, recorder: RunRecorder, run_id: str, workspace: str | None) -> None:
    """Let the segment's ledger ask what the other runs of its workspace sent within a window
    (asked only when the workspace has a limit: see :mod:`toolwire.policy.egress`). A store that
    cannot answer fails the request closed: with the workspace's total unknown, nothing more
    is sent, and the run fails saying why."""
    read = getattr(recorder, "workspace_egress", None)
    if workspace is None or not callable(read):
        return

    def others(seconds: float) -> int:  # the key made here: a run with no limit never asks
        since = datetime.now(UTC) - timedelta(seconds=seconds)
        try:
            return int(read(workspace_key(workspace), since=since, excluding=run_id))
        except StoreError:
            log.warning("run %s: the workspace's egress could not be read", run_id, exc_info=True)
            raise EgressUnread(WORKSPACE_EGRESS_UNREAD) from None

    async def asked(seconds: float) -> int:
        return await asyncio.to_thread(others, seconds)

    trace.egress_others = asked


def _egress_spent(recorder: RunRecorder, run_id: str) -> int:
    """The bytes of tool output the run's stored segments sent (0: a recorder that keeps no
    ledger)."""
    spent = getattr(recorder, "egress_spent", None)
    return int(spent(run_id)) if callable(spent) else 0


def _refused_calls(recorder: RunRecorder, run_id: str) -> frozenset[str]:
    """The calls the run's stored segments refused, by id as stored (none: a recorder that
    keeps no steps to read)."""
    refused = getattr(recorder, "refused_calls", None)
    return frozenset(refused(run_id)) if callable(refused) else frozenset()
