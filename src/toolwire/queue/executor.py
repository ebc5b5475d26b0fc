"""One job in a worker: take its run, carry it on from where it stands, settle or suspend it.

The job names a run; the store says the rest. ``execute``:

1. takes the run (``queued`` -> ``running`` under a fresh claim); a run that is not queued
   (cancelled meanwhile, or already taken) is left alone;
2. opens its sealed request or checkpoint and, from the charter sealed in it, rebuilds its
   provider (keyed from this worker's environment) and its tools' context (the run's user
   and workspace);
3. decides where it starts (see :mod:`toolwire.queue.recovery`) and runs it through
   ``Runtime.carry_on`` with a :class:`~toolwire.queue.checkpoint.Checkpointer`;
4. while it runs, a cancel from anywhere (or another worker taking it) stops it, an in-flight
   provider call aborted: the store tells the runtime, as for every run (see
   ``Recording.on_cancel``).

Anything that keeps the run from starting (a state it cannot open, no key for its provider on
this worker) fails it with a short, safe reason. When the worker shuts down (its job is
cancelled), the run goes back to the queue from its last checkpoint.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Sequence

from toolwire.core.errors import ConfigError, StateError, StateNotLatest, StoreError
from toolwire.core.latest import NOT_LATEST, OLDER_VERSION, open_latest, require_progress
from toolwire.core.lifecycle import RUN_FAILED, WRITE_NOT_REPEATED, RunStatus, TerminationReason
from toolwire.core.sealing import QUEUED_REQUEST, Binding, Sealer, StateKey, bound
from toolwire.loop.endings import LoopResult, result_of
from toolwire.loop.state import Before, RunState
from toolwire.policy.charter import CharterRefused
from toolwire.policy.charter import context as tool_context
from toolwire.queue import engine
from toolwire.queue.checkpoint import (
    Checkpointer,
    Saved,
    carries_on_in,
    open_saved,
    started_tools,
)
from toolwire.queue.recovery import WRITE_OUTSIDE_TURN, waiting_again
from toolwire.runs.resume import chartered
from toolwire.runs.runtime import LoopSegment, RunOutcome, Runtime, carried
from toolwire.store.queued import QueuedRuns, Taken
from toolwire.store.runs import RunStore
from toolwire.tools.api import ToolContext, needs_approval
from toolwire.tools.registry import ToolRegistry

log = logging.getLogger("toolwire.queue")
AVAILABILITY_SECONDS = 5.0  # tool switches made in the inspector reach new runs this late
LEGACY_CHECKPOINT = (
    "it was sealed by an earlier release, before versions, so it is not carried on; cancel "
    "the run and submit it again"
)


class Executor:
    """Executes the runs of a worker's jobs on ``runtime`` (whose recorder is ``store``)."""

    def __init__(self, store: RunStore, runtime: Runtime, key: StateKey) -> None:
        self.store = store
        self.runtime = runtime
        self.key = key
        self.runs = QueuedRuns(store)
        self._availability_at = -AVAILABILITY_SECONDS

    @property
    def registry(self) -> ToolRegistry:
        return self.runtime.registry

    async def execute(self, run_id: str, job_id: int) -> RunOutcome | None:
        """Carry ``run_id`` on; None when it was not this job's to carry."""
        claim = uuid.uuid4().hex
        taken = await asyncio.to_thread(self.runs.take, run_id, claim, job_id)
        if taken is None:
            return None
        self.store.hold(run_id, claim, taken.privacy)
        try:
            return await self._carry(taken)
        except asyncio.CancelledError:
            # The worker is shutting down: the run waits for the next one, from its checkpoint.
            await asyncio.shield(asyncio.to_thread(self.runs.requeue, run_id, claim, engine.defer))
            raise
        finally:
            self.store.release(run_id)

    async def _carry(self, taken: Taken) -> RunOutcome:
        run_id = taken.run_id
        try:
            saved, start = await asyncio.to_thread(self._start, taken)
            charter = chartered(saved.state)
            provider = self.runtime.provider_factory(charter.provider)
            context = await asyncio.to_thread(tool_context, charter, run_id=run_id)
        except (StateError, ConfigError, CharterRefused) as exc:
            return await self._fail(run_id, f"the run cannot start on this worker: {exc}")
        except RefusedStart as exc:
            return await self._fail(run_id, str(exc))
        except Exception:  # a bug, or a store that failed: never a run left running for it
            log.exception("run %s could not start", run_id)
            return await self._fail(run_id, RUN_FAILED)
        await asyncio.to_thread(self._refresh_availability)
        checkpointer = Checkpointer(
            run_id, key=self.key, save=self._saver(run_id), registry=self.registry,
            saved=saved if saved.action is not None else None,
        )  # fmt: skip
        decided = saved.action is not None  # a person's decision on its paused turn
        return await self.runtime.carry_on(
            run_id, start(context), provider=provider, charter=charter,
            sequence=taken.sequence, checkpoint=checkpointer,
            resumed=carried(saved.state) if decided else None,
        )  # fmt: skip

    def _start(self, taken: Taken) -> tuple[Saved, Start]:
        """Where the run starts, and how (see :mod:`toolwire.queue.recovery`). Only the run's
        latest request or checkpoint starts it (see :mod:`toolwire.core.latest`)."""
        run_id = taken.run_id
        if taken.checkpoint is None:
            if taken.request is None:
                raise RefusedStart("the run has neither a request nor a checkpoint")
            text, binding = open_latest(self.key, run_id, taken.request, QUEUED_REQUEST,
                                        version=taken.version)  # fmt: skip
            self._require_progress(taken, binding, round_=1)  # a request: no step bound, 0
            before = Before(provider=taken.provider, privacy=taken.privacy)
            state = RunState.from_json(text, before=before)
            return Saved(state=state), _fresh(run_id, state)
        saved = self._open_checkpoint(taken, taken.checkpoint)
        if saved.action is None:
            if saved.started:
                raise RefusedStart(WRITE_OUTSIDE_TURN)
            return saved, _next_round(run_id, saved.state)
        if saved.unknown:
            return saved, _paused(waiting_again(run_id, saved))
        pause = saved.state.pause
        if pause is not None and pause.rerun and saved.action == "deny":
            raise RefusedStart(WRITE_NOT_REPEATED)
        return saved, _decided(run_id, saved)

    def _open_checkpoint(self, taken: Taken, sealed: str) -> Saved:
        """The run's checkpoint, if it is its latest; ``StateError`` otherwise."""
        binding = bound(sealed)
        if binding is None:  # sealed before versions: nothing says which steps followed it
            raise StateNotLatest(f"{NOT_LATEST}: {LEGACY_CHECKPOINT}")
        saved = open_saved(self.key, taken.run_id, sealed, binding=binding)
        if binding.version != taken.version:
            raise StateNotLatest(OLDER_VERSION)
        self._require_progress(taken, binding, round_=carries_on_in(saved),
                               started=started_tools(saved))  # fmt: skip
        return saved

    def _require_progress(
        self, taken: Taken, binding: Binding | None, *, round_: int, started: Sequence[str] = ()
    ) -> None:
        """What the run recorded after its value's step is what its own worker could have."""
        sequence = 0 if binding is None else binding.sequence
        if taken.sequence < sequence:  # steps are never removed: a value from elsewhere
            raise StateNotLatest(f"{NOT_LATEST}: its step is not stored")
        after = [] if taken.sequence == sequence else self.runs.marks_after(taken.run_id, sequence)
        require_progress(after, round_=round_, started=started, is_write=self._is_write)

    def _is_write(self, name: str) -> bool:
        tool = self.registry.get(name)
        return tool is not None and needs_approval(tool)

    def _saver(self, run_id: str) -> Callable[[Sealer], bool]:
        held = self.store.held(run_id)
        assert held is not None
        claim = held.claim

        def save(seal: Sealer) -> bool:
            self.store.flush()  # the round's steps first: the next worker's follow them
            return self.runs.save_checkpoint(run_id, claim, seal)

        return save

    async def _fail(self, run_id: str, error: str) -> RunOutcome:
        log.warning("run %s failed before it started: %s", run_id, error)
        outcome = RunOutcome(run_id=run_id, status=RunStatus.FAILED, result=None, steps=(),
                             wall_ms=0.0, error=error)  # fmt: skip
        try:
            await asyncio.to_thread(self.store.settle, outcome)
        except StoreError:
            log.exception("run %s could not be settled", run_id)
            return dataclasses.replace(outcome, error=RUN_FAILED)
        return outcome

    def _refresh_availability(self) -> None:
        """The store's tool switches, re-read at most every ``AVAILABILITY_SECONDS``."""
        now = time.monotonic()
        if now - self._availability_at < AVAILABILITY_SECONDS:
            return
        self._availability_at = now
        try:
            self.registry.availability = self.store.load_availability()
        except StoreError:
            log.warning("the tool switches could not be read; keeping the last ones")


class RefusedStart(Exception):
    """The run cannot be carried on automatically; the message says why (safe to show)."""


Start = Callable[[ToolContext], LoopSegment]  # given the run's tools' context, its segment


def _fresh(run_id: str, state: RunState) -> Start:
    """A run whose first round never completed: from its request, as a new run."""

    def start(context: ToolContext) -> LoopSegment:
        return lambda loop, trace: loop.run(
            state.messages, context=context, options=state.options, trace=trace, run_id=run_id,
            charter=state.charter,
        )  # fmt: skip

    return start


def _next_round(run_id: str, state: RunState) -> Start:
    def start(context: ToolContext) -> LoopSegment:
        return lambda loop, trace: loop.advance(state, context=context, trace=trace,
                                                run_id=run_id)  # fmt: skip

    return start


def _decided(run_id: str, saved: Saved) -> Start:
    """A decided turn: the decision applied (again) to its paused state. Calls an earlier worker
    finished are named in its pause as recorded: the loop does not re-check their previews
    (their writes changed what the previews were computed on), and they never run again."""
    state = saved.state
    if saved.recorded and state.pause is not None:
        recorded = (*state.pause.recorded, *saved.recorded)
        state = state._replace(pause=dataclasses.replace(state.pause, recorded=recorded))

    def start(context: ToolContext) -> LoopSegment:
        return lambda loop, trace: loop.resume(
            state, approved=saved.action == "approve", values=saved.values,
            context=context, trace=trace, run_id=run_id,
        )  # fmt: skip

    return start


def _paused(state: RunState) -> Start:
    """A turn whose writes have unknown outcomes: the run waits for an operator on it."""

    async def paused() -> LoopResult:
        return result_of(state, "", False, TerminationReason.SUSPENDED, state)

    return lambda context: lambda loop, trace: paused()
