"""The run lifecycle around the loop: record, cancel, suspend, resume, settle.

For every run (and every resumed segment of one): the recorder (the audit store) holds a row;
each step goes first to the live observers, then to the recorder; a segment ends by settling
the run exactly once, or by suspending it. Statuses and their rules live in
:mod:`toolwire.lifecycle`; this module decides which one applies.

- A recorder failure never breaks a run: it is logged and reported on the outcome. But a
  suspension that cannot be stored (no state key, a store error, a cancel that won) fails the
  run: a resume that can never happen is not promised.
- Cancellation takes effect at the next step boundary (an observer raises ``RunCancelled``)
  and also aborts an in-flight provider call by cancelling the task. A waiting run is
  cancelled in the store.
- A resume checks the decision (its turn digest, its kind, a person's input against the
  tool's schema) before anything changes, then claims the run atomically: of two racing
  resumes, in one process or two, one runs the pending turn and the other gets
  ``StaleDecision``.
- No database call blocks the event loop: the recorder's blocking calls run in a thread;
  ``record_step`` only queues.
- A direct call may be held for a person (see :mod:`toolwire.held`): whoever decides runs it
  with its caller's user and workspace and hands the answer over to the caller in the store.
- Telemetry (:mod:`toolwire.telemetry`) watches a segment only when it is configured: then it
  sees every step and the segment's end; otherwise nothing is attached.
- A queued run (:mod:`toolwire.queue`) is executed by workers, which carry it on with
  ``carry_on``; a decision on it is queued, never resumed in the deciding process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from toolwire.errors import (
    DecisionError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    RunCancelled,
    RunNotWaiting,
    StaleDecision,
    StateError,
)
from toolwire.held import CallAnswer, answer_of, await_answer, seal_answer
from toolwire.lifecycle import RUN_FAILED, RunStatus, settled_status
from toolwire.loop import Checkpoint, LoopResult, ToolLoop
from toolwire.messages import ChatMessage, ToolCall
from toolwire.options import RunOptions
from toolwire.providers.base import (
    CompletionRequest,
    CompletionResponse,
    Provider,
    no_session,
)
from toolwire.providers.presets import MaxTokensField
from toolwire.reprs import count, ident, shape, size, tagged
from toolwire.sealing import StateKey, require
from toolwire.state import Pause, RunState
from toolwire.suspension import validate_input
from toolwire.telemetry import RunTelemetry, Segment, SegmentWatch, from_environment
from toolwire.tools.api import ToolContext
from toolwire.tools.policy import ToolPolicy
from toolwire.tools.registry import ToolRegistry
from toolwire.trace import DeltaObserver, Observer, RunStep, RunTrace
from toolwire.trust import TrustZone

log = logging.getLogger("toolwire.runtime")
STORE_FAILED = "the run store failed; this run is not fully recorded"
QUEUED_RUN = (
    "this run is executed by queue workers: its decision goes to the queue (toolwire runs "
    "approve, deny or input, or an inspector on the same store)"
)
DIRECT_CALL = "direct call"  # the provider label of a direct tool call's run
T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderRef:
    """How to reach a run's provider again, in another process. Never a key."""

    name: str
    model: str | None = None
    base_url: str | None = None
    trust_zone: str | None = None
    script: str | None = None
    max_tokens_field: str | None = None  # OpenAI-compatible servers differ on the name

    @classmethod
    def of(cls, provider: Provider, model: str | None, options: RunOptions) -> ProviderRef:
        return cls(
            name=provider.name,
            model=model or getattr(provider, "model", None),
            base_url=getattr(provider, "base_url", None),
            trust_zone=options.trust_zone or provider.trust_zone,
            script=getattr(provider, "script_path", None),
            max_tokens_field=getattr(provider, "max_tokens_field", None),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequest:
    """Everything one run needs. ``model`` labels the run; the provider already knows it."""

    messages: tuple[ChatMessage, ...]
    provider: Provider
    model: str | None = None
    options: RunOptions = field(default_factory=RunOptions)
    context: ToolContext = field(default_factory=ToolContext)
    rerun_of: str | None = None  # the stored run this one starts again, when it does

    @classmethod
    def of(
        cls,
        prompt: str,
        *,
        provider: Provider,
        system: str | None = None,
        model: str | None = None,
        options: RunOptions | None = None,
        context: ToolContext | None = None,
    ) -> RunRequest:
        """A request from a prompt and an optional system prompt."""
        messages = ([ChatMessage.system(system)] if system else []) + [ChatMessage.user(prompt)]
        return cls(
            messages=tuple(messages),
            provider=provider,
            model=model,
            options=options or RunOptions(),
            context=context or ToolContext(),
        )

    @property
    def provider_ref(self) -> ProviderRef:
        return ProviderRef.of(self.provider, self.model, self.options)

    def __repr__(self) -> str:
        """Counts and names; no prompt, and nothing of the workspace (it may hold secrets)."""
        user = self.context.user
        return tagged(
            "RunRequest",
            messages=count(self.messages),
            provider=ident(getattr(self.provider, "name", None)),
            model=ident(self.model),
            max_rounds=self.options.max_rounds,
            user=None if user is None else ident(user.name),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorDecision:
    """A person's answer to a waiting run. ``digest`` names the turn it was made on."""

    action: Literal["approve", "deny", "input"]
    digest: str
    actor: str
    reason: str | None = None
    values: Mapping[str, Any] | None = None  # the input, for ``input``; never recorded

    def __repr__(self) -> str:
        return tagged(
            "OperatorDecision",
            action=ident(self.action),
            digest=ident(self.digest),
            actor=ident(self.actor),
            reason_bytes=size(self.reason),
            values=None if self.values is None else shape(self.values),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOutcome:
    """How a run (or a segment of it) ended. ``error`` is a short, safe text."""

    run_id: str
    status: RunStatus
    result: LoopResult | None
    steps: tuple[RunStep, ...]
    wall_ms: float
    error: str | None = None
    store_error: str | None = None

    @property
    def truncated(self) -> bool:
        return self.result is not None and self.result.truncated

    def __repr__(self) -> str:
        """Status, result and counts; the steps themselves are for the trace's sinks."""
        return tagged(
            "RunOutcome",
            run_id=ident(self.run_id),
            status=self.status,
            result=self.result,
            steps=len(self.steps),
            wall_ms=round(self.wall_ms, 2),
            error=ident(self.error),
            store_error=ident(self.store_error),
        )

    @property
    def pause(self) -> Pause | None:
        """What a waiting run waits on (its calls, previews and digest)."""
        state = None if self.result is None else self.result.suspended
        return None if state is None or not self.status.waiting else state.pause


@dataclass(frozen=True, slots=True, kw_only=True)
class Waiting:
    """A waiting run as the recorder keeps it: the sealed state and how to resume it."""

    run_id: str
    status: RunStatus
    sealed: str
    digest: str
    provider: ProviderRef
    next_sequence: int
    queued: bool = False  # executed by queue workers: a decision on it is queued

    def __repr__(self) -> str:
        return tagged(
            "Waiting",
            run_id=ident(self.run_id),
            status=self.status,
            sealed_bytes=size(self.sealed),
            digest=ident(self.digest),
            provider=ident(self.provider.name),
            next_sequence=self.next_sequence,
        )


class RunRecorder(Protocol):
    """Where runs are kept: the audit store implements this."""

    def begin(self, request: RunRequest) -> str:
        """Create the run row (status running) and return its id."""
        ...

    def record_step(self, run_id: str, sequence: int, step: RunStep) -> None: ...

    def settle(self, outcome: RunOutcome) -> bool:
        """Set the terminal state once, erasing any sealed state; a second settle is ignored."""
        ...

    def cancel_requested(self, run_id: str) -> bool:
        """True when someone (maybe another process) asked to cancel this run."""
        ...

    def suspend(self, run_id: str, status: RunStatus, sealed: str, digest: str) -> bool:
        """Move a running run to ``status`` with its sealed state; False if a cancel won."""
        ...

    def waiting(self, run_id: str) -> Waiting | None:
        """The run if it is waiting, else None."""
        ...

    def claim(self, run_id: str, status: RunStatus, digest: str) -> bool:
        """Atomically move the run from ``status`` (with ``digest``) back to running."""
        ...

    def request_cancel(self, run_id: str) -> bool:
        """Cancel a running or waiting run; True if it was one."""
        ...

    def hand_over(self, run_id: str, sealed: str) -> None:
        """Keep a held call's sealed answer for the caller waiting for it."""
        ...

    def take_answer(self, run_id: str) -> tuple[RunStatus, str | None] | None:
        """The run's status and, once it ended, its held answer (erased as it is taken)."""
        ...


ProviderFactory = Callable[[ProviderRef], Provider]
ContextFactory = Callable[[RunState], ToolContext]
LoopSegment = Callable[[ToolLoop, RunTrace], Coroutine[Any, Any, LoopResult]]


@dataclass(frozen=True, slots=True)
class Checked:
    """A decision checked against its waiting run: the run, its opened state, the input."""

    waiting: Waiting
    state: RunState
    values: Mapping[str, Any] | None

    def __repr__(self) -> str:
        return tagged("Checked", waiting=self.waiting, state=self.state,
                      values=None if self.values is None else shape(self.values))  # fmt: skip


def provider_from_ref(ref: ProviderRef) -> Provider:
    """The provider ``ref`` names, keyed from the environment (never from the store)."""
    from pathlib import Path

    from toolwire.providers.select import create_provider

    return create_provider(
        "scripted" if ref.script else ref.name,  # a script's own name labels runs, not adapters
        model=ref.model,
        base_url=ref.base_url,
        trust_zone=ref.trust_zone,
        script=Path(ref.script) if ref.script else None,
        max_tokens_field=_cap_field(ref.max_tokens_field),
    )


def _cap_field(value: str | None) -> MaxTokensField | None:
    """A stored output-cap field name, if it is one the adapter knows."""
    fields: dict[str | None, MaxTokensField] = {
        "max_tokens": "max_tokens",
        "max_completion_tokens": "max_completion_tokens",
    }
    return fields.get(value)


def context_from_state(state: RunState) -> ToolContext:
    """The run's user again, and its workspace read from the file it came from."""
    from toolwire.workspace import load_workspace

    workspace = load_workspace(state.workspace) if state.workspace else None
    return ToolContext(user=state.user, workspace=workspace)


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
    ) -> None:
        """``telemetry``: spans and metrics of runs; by default as the ``OTEL_*`` environment
        configures them (and none when it does not)."""
        self.registry = registry
        self.recorder: RunRecorder = recorder or MemoryRecorder()
        if telemetry is None:
            telemetry = from_environment(getattr(recorder, "privacy", None))
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
        run = _Recording(self.recorder)
        await asyncio.to_thread(run.begin, request)
        if on_start is not None:
            on_start(run.run_id)
        watch = self._watch(run.run_id, request.provider_ref, request.options, "run")
        trace = self._trace(run, request.options, observers, deltas, watch)
        loop = ToolLoop(request.provider, self.registry, policy=self.policy)
        segment = loop.run(request.messages, context=request.context, options=request.options,
                           trace=trace, run_id=run.run_id)  # fmt: skip
        return await self._drive(run, trace, segment, request.context, started, watch=watch)

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
        checked = await asyncio.to_thread(self.check, run_id, decision)
        waiting, state, values = checked.waiting, checked.state, checked.values
        if waiting.queued:
            raise DecisionError(QUEUED_RUN)
        held = waiting.provider.name == DIRECT_CALL
        if held:  # the call is its caller's: its user and workspace, whoever decides
            provider, context = DirectCall(), context_from_state(state)
        else:
            provider = provider or self.provider_factory(waiting.provider)
            context = context or context_from_state(state)
        claimed = await asyncio.to_thread(
            self.recorder.claim, run_id, waiting.status, waiting.digest
        )
        if not claimed:
            raise StaleDecision("another decision on this turn was taken first")
        if on_start is not None:
            on_start(run_id)
        run = _Recording(self.recorder, run_id=run_id, sequence=waiting.next_sequence - 1)
        watch = self._watch(run_id, waiting.provider, state.options, "resume")
        trace = self._trace(run, state.options, observers, deltas, watch)
        trace.record_decision(state.rounds, decision.action, decision.actor, decision.reason,
                              decision.digest)  # fmt: skip
        loop = ToolLoop(provider, self.registry, policy=self.policy)
        approved = decision.action == "approve"
        if held:
            segment = loop.resume_call(state, approved=approved, values=values, context=context,
                                       trace=trace)  # fmt: skip
            name = state.pause.calls[0].name if state.pause and state.pause.calls else ""
            return await self._drive(run, trace, segment, context, started, held=name,
                                     watch=watch)  # fmt: skip
        segment = loop.resume(state, approved=approved, values=values, context=context,
                              trace=trace, run_id=run_id)  # fmt: skip
        return await self._drive(run, trace, segment, context, started, watch=watch)

    async def carry_on(
        self,
        run_id: str,
        segment: LoopSegment,
        *,
        provider: Provider,
        context: ToolContext,
        options: RunOptions,
        sequence: int,
        checkpoint: Checkpoint | None = None,
        observers: Sequence[Observer] = (),
    ) -> RunOutcome:
        """Carry on a run the recorder already holds (a queued run, in a worker).

        ``segment(loop, trace)`` starts the loop where the run stands: a fresh request, the
        round after a checkpoint, or a decided turn. ``sequence`` is the run's last stored
        step; ``checkpoint`` keeps the run's progress as it goes.
        """
        started = time.perf_counter()
        run = _Recording(self.recorder, run_id=run_id, sequence=sequence)
        watch = self._watch(run_id, ProviderRef.of(provider, None, options), options, "run")
        trace = self._trace(run, options, observers, watch=watch)
        loop = ToolLoop(provider, self.registry, policy=self.policy, checkpoint=checkpoint)
        return await self._drive(run, trace, segment(loop, trace), context, started,
                                 watch=watch)  # fmt: skip

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
        run, whose answer :meth:`await_answer` brings (see :mod:`toolwire.held`). ``caller``
        names who called, in the run's prompt; ``options`` carry its trust zone.
        """
        started = time.perf_counter()
        source = f" from {caller}" if caller else ""
        request = RunRequest(
            messages=(ChatMessage.user(f"direct call of {call.name}{source}"),),
            provider=DirectCall(),
            options=options or RunOptions(),
            context=context,
        )
        run = _Recording(self.recorder)
        await asyncio.to_thread(run.begin, request)
        if on_start is not None:
            on_start(run.run_id)
        watch = self._watch(run.run_id, request.provider_ref, request.options, "call")
        trace = self._trace(run, request.options, observers, watch=watch)
        loop = ToolLoop(request.provider, self.registry, policy=self.policy)
        segment = loop.call(call, offered=offered, context=context, trace=trace,
                            options=request.options, hold=hold, run_id=run.run_id)  # fmt: skip
        return await self._drive(run, trace, segment, context, started, watch=watch)

    async def await_answer(self, run_id: str, name: str, *, decision_seconds: float) -> CallAnswer:
        """The answer of the held call ``run_id`` (of tool ``name``) once it was decided and
        ran; a run still undecided after ``decision_seconds`` is cancelled."""
        return await await_answer(
            self.recorder, self.state_key, run_id, name, decision_seconds=decision_seconds
        )

    def workspace_of(self, run_id: str) -> str | None:
        """The workspace file the waiting run ``run_id``'s tools were given, if any."""
        waiting = self.recorder.waiting(run_id)
        if waiting is None:
            raise RunNotWaiting("no waiting run has this id")
        return self._open(waiting).workspace

    def pending(self, run_id: str) -> Pause:
        """What the waiting run ``run_id`` waits on; ``RunNotWaiting`` or ``StateError``."""
        pause = self.suspended(run_id).pause
        assert pause is not None
        return pause

    def suspended(self, run_id: str) -> RunState:
        """The sealed state of the waiting run ``run_id``; ``RunNotWaiting`` or ``StateError``."""
        waiting = self.recorder.waiting(run_id)
        if waiting is None:
            raise RunNotWaiting("no waiting run has this id")
        return self._open(waiting)

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
        run: _Recording,
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
        trace.subscribe(lambda step: self._check_cancel(run))
        return trace

    def _watch(
        self, run_id: str, provider: ProviderRef, options: RunOptions, segment: Segment
    ) -> SegmentWatch | None:
        if self.telemetry is None:
            return None
        return self.telemetry.watch(run_id, provider, options, segment)

    async def _drive(
        self,
        run: _Recording,
        trace: RunTrace,
        segment: Coroutine[Any, Any, LoopResult],
        context: ToolContext,
        started: float,
        *,
        held: str | None = None,
        watch: SegmentWatch | None = None,
    ) -> RunOutcome:
        """Run one segment to its end and settle it (or suspend it). ``held`` names the tool of
        a held call, whose answer is handed over to its caller before the run settles."""
        task = asyncio.ensure_future(segment)
        self._track(run.run_id, task)
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
        except Exception as exc:
            log.exception("run %s failed", run.run_id)
            status, error, failure = RunStatus.FAILED, RUN_FAILED, exc
        finally:
            self._untrack(run.run_id)
        if result is not None and result.suspended is not None:
            status, error = await asyncio.to_thread(self._suspend, run, result.suspended, context)
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
                await asyncio.to_thread(self._hand_over, run, outcome, held)
            outcome = await asyncio.to_thread(run.settle, outcome)
        if watch is not None:
            watch.end(outcome, failure)
        return outcome

    def _hand_over(self, run: _Recording, outcome: RunOutcome, name: str) -> None:
        """Seal the held call's answer for its caller; a failure is logged, and the caller
        then reads that the answer was lost."""
        try:
            sealed = seal_answer(self.state_key, run.run_id, answer_of(outcome, name))
        except StateError:
            log.exception("run %s: the answer of a held call could not be sealed", run.run_id)
            return
        run.guard(lambda: self.recorder.hand_over(run.run_id, sealed), None)

    def _suspend(
        self, run: _Recording, state: RunState, context: ToolContext
    ) -> tuple[RunStatus, str | None]:
        """Seal and store the paused state; a run that cannot wait fails instead."""
        pause = state.pause
        assert pause is not None
        source = getattr(context.workspace, "source", None)
        state = state._replace(workspace=None if source is None else str(source))
        try:
            sealed = require(self.state_key).seal(run.run_id, state.to_json())
        except StateError as exc:
            return RunStatus.FAILED, f"the run could not be suspended: {exc}"
        if not run.begun:
            return RunStatus.FAILED, f"the run could not be suspended: {STORE_FAILED}"
        stored = run.guard(lambda: self.recorder.suspend(run.run_id, pause.status, sealed,
                                                         pause.digest), None)  # fmt: skip
        if stored is None:
            return RunStatus.FAILED, f"the run could not be suspended: {STORE_FAILED}"
        if not stored:
            return RunStatus.CANCELLED, None
        return pause.status, None

    def check(self, run_id: str, decision: OperatorDecision) -> Checked:
        """Everything about a decision that can be checked before the run changes.

        Raises ``DecisionError`` or ``StateError``, as ``resume`` does."""
        waiting = self.recorder.waiting(run_id)
        if waiting is None:
            raise RunNotWaiting("no waiting run has this id")
        state = self._open(waiting)
        pause = state.pause
        assert pause is not None
        if decision.digest != pause.digest:
            raise StaleDecision("the decision was made on another turn than the one pending")
        wants_input = pause.status is RunStatus.AWAITING_INPUT
        if (decision.action == "input") != wants_input:
            needed = "input" if wants_input else "approve or deny"
            raise RunNotWaiting(f"this run waits for {needed}, not {decision.action}")
        values = None
        if wants_input:
            tool = self.registry.get(pause.input_tool or "")
            values = validate_input(tool, decision.values or {})
        return Checked(waiting, state, values)

    def _open(self, waiting: Waiting) -> RunState:
        state = RunState.from_json(require(self.state_key).open(waiting.run_id, waiting.sealed))
        if state.pause is None or state.pause.digest != waiting.digest:
            raise RunNotWaiting("the run's stored state does not match its pending turn")
        return state

    def _check_cancel(self, run: _Recording) -> None:
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

    def _forget_cancel(self, run_id: str) -> bool:
        with self._lock:
            was = run_id in self._cancelled
            self._cancelled.discard(run_id)
            return was


def _outer_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _provider_error_text(exc: ProviderError) -> str:
    """The class (and status); for a server that could not be reached, which one and after how
    many attempts. Those messages are built by the HTTP layer from its own words and the
    endpoint (key masked, no query), never from a response body."""
    if isinstance(exc, ProviderConnectionError | ProviderTimeout) and not exc.body:
        return f"the provider call failed: {exc}"
    status = f" (HTTP {exc.status})" if exc.status else ""
    return f"the provider call failed: {type(exc).__name__}{status}"


class DirectCall:
    """The provider of a direct tool call: there is none, and asking for one is a bug."""

    name = DIRECT_CALL
    trust_zone = TrustZone.LOCAL  # nothing leaves the machine

    def session(self) -> AbstractAsyncContextManager[None]:
        return no_session()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        raise RuntimeError("a direct tool call has no model")


class MemoryRecorder:
    """Keeps waiting runs in memory and nothing else; mints ids. For runtimes without a store.

    A run suspended here can be resumed by the same process only. How a held call ended is
    kept until its caller takes the answer (see :mod:`toolwire.held`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refs: dict[str, ProviderRef] = {}
        self._sequences: dict[str, int] = {}
        self._waiting: dict[str, Waiting] = {}
        self._cancelled: set[str] = set()
        self._held: set[str] = set()
        self._ended: dict[str, RunStatus] = {}
        self._answers: dict[str, str] = {}

    def begin(self, request: RunRequest) -> str:
        run_id = uuid.uuid4().hex
        with self._lock:
            self._refs[run_id] = request.provider_ref
        return run_id

    def record_step(self, run_id: str, sequence: int, step: RunStep) -> None:
        with self._lock:
            self._sequences[run_id] = sequence

    def settle(self, outcome: RunOutcome) -> bool:
        with self._lock:
            self._waiting.pop(outcome.run_id, None)
            self._sequences.pop(outcome.run_id, None)
            settled = self._refs.pop(outcome.run_id, None) is not None
            if settled:
                cancelled = outcome.run_id in self._cancelled
                self._end(outcome.run_id, RunStatus.CANCELLED if cancelled else outcome.status)
            return settled

    def cancel_requested(self, run_id: str) -> bool:
        return run_id in self._cancelled

    def suspend(self, run_id: str, status: RunStatus, sealed: str, digest: str) -> bool:
        with self._lock:
            if run_id in self._cancelled or run_id not in self._refs:
                return False
            self._waiting[run_id] = Waiting(
                run_id=run_id, status=status, sealed=sealed, digest=digest,
                provider=self._refs[run_id], next_sequence=self._sequences.get(run_id, 0) + 1,
            )  # fmt: skip
            if self._refs[run_id].name == DIRECT_CALL:
                self._held.add(run_id)
            return True

    def waiting(self, run_id: str) -> Waiting | None:
        with self._lock:
            return self._waiting.get(run_id)

    def claim(self, run_id: str, status: RunStatus, digest: str) -> bool:
        with self._lock:
            found = self._waiting.get(run_id)
            if found is None or found.status is not status or found.digest != digest:
                return False
            del self._waiting[run_id]
            return True

    def request_cancel(self, run_id: str) -> bool:
        with self._lock:
            if run_id not in self._refs:
                return False
            self._cancelled.add(run_id)
            if self._waiting.pop(run_id, None) is not None:
                self._refs.pop(run_id, None)
                self._end(run_id, RunStatus.CANCELLED)
            return True

    def hand_over(self, run_id: str, sealed: str) -> None:
        with self._lock:
            self._answers[run_id] = sealed

    def take_answer(self, run_id: str) -> tuple[RunStatus, str | None] | None:
        with self._lock:
            if run_id in self._waiting:
                return self._waiting[run_id].status, None
            if run_id in self._refs:
                return RunStatus.RUNNING, None
            ended = self._ended.pop(run_id, None)
            if ended is None:
                return None
            return ended, self._answers.pop(run_id, None)

    def _end(self, run_id: str, status: RunStatus) -> None:
        """Remember how a held call ended, for its caller (lock held)."""
        if run_id in self._held:
            self._held.discard(run_id)
            self._ended[run_id] = status


class _Recording:
    """One segment's view of the recorder: fail-soft, counting sequence numbers.

    After a failed ``begin`` the store has no row, so nothing more is sent. After a failed
    step, later steps are skipped (the record is already incomplete) but the settle is still
    attempted, so the run does not stay ``running`` in the store.
    """

    def __init__(self, recorder: RunRecorder, *, run_id: str = "", sequence: int = 0) -> None:
        self.recorder = recorder
        self.run_id = run_id
        self.sequence = sequence
        self.begun = bool(run_id)
        self.store_error: str | None = None

    def begin(self, request: RunRequest) -> None:
        self.run_id = self.guard(lambda: self.recorder.begin(request), "")
        self.begun = bool(self.run_id)
        self.run_id = self.run_id or uuid.uuid4().hex

    def record_step(self, step: RunStep) -> None:
        self.sequence += 1
        sequence = self.sequence
        if self.begun and self.store_error is None:
            self.guard(lambda: self.recorder.record_step(self.run_id, sequence, step), None)

    def cancel_requested(self) -> bool:
        if not self.begun or self.store_error is not None:
            return False
        return self.guard(lambda: self.recorder.cancel_requested(self.run_id), False)

    def report(self, outcome: RunOutcome) -> RunOutcome:
        if self.store_error is not None:
            outcome = dataclasses.replace(outcome, store_error=self.store_error)
        return outcome

    def settle(self, outcome: RunOutcome) -> RunOutcome:
        outcome = self.report(outcome)
        if self.begun:
            self.guard(lambda: self.recorder.settle(outcome), False)
        return self.report(outcome)

    def guard(self, action: Callable[[], T], fallback: T) -> T:
        """Run a store action; a failure is logged and remembered, never raised."""
        try:
            return action()
        except Exception:
            log.exception("the run store failed; run %s goes on without it", self.run_id)
            self.store_error = STORE_FAILED
            return fallback
