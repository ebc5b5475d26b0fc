"""The run lifecycle around the loop: record, cancel, settle.

For every run: the recorder (the audit store) begins a row before the first step; each step
goes first to the live observers, then to the recorder; the run is settled exactly once, with a
status that says what really happened. A recorder failure never breaks the run: it is logged
and reported on the outcome. Cancellation takes effect at the next step boundary (an observer
raises ``RunCancelled``) and also aborts an in-flight provider call by cancelling the task.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, TypeVar

from toolwire.errors import ProviderError, RunCancelled
from toolwire.loop import LoopResult, RunOptions, ToolLoop
from toolwire.messages import ChatMessage
from toolwire.providers.base import Provider
from toolwire.tools.api import ToolContext
from toolwire.tools.policy import ToolPolicy
from toolwire.tools.registry import ToolRegistry
from toolwire.trace import Observer, RunStep, RunTrace

log = logging.getLogger("toolwire.runtime")
STORE_FAILED = "the run store failed; this run is not fully recorded"
T = TypeVar("T")


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # the process died while the run was running
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_INPUT = "awaiting_input"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequest:
    """Everything one run needs. ``model`` labels the run; the provider already knows it."""

    messages: tuple[ChatMessage, ...]
    provider: Provider
    model: str | None = None
    options: RunOptions = field(default_factory=RunOptions)
    context: ToolContext = field(default_factory=ToolContext)

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


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOutcome:
    """How a run ended. ``error`` is a short, safe text; details went to the log."""

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


class RunRecorder(Protocol):
    """Where runs are kept: the audit store implements this."""

    def begin(self, request: RunRequest) -> str:
        """Create the run row (status running) and return its id."""
        ...

    def record_step(self, run_id: str, sequence: int, step: RunStep) -> None: ...

    def settle(self, outcome: RunOutcome) -> bool:
        """Set the terminal state once; a second settle is ignored and returns False."""
        ...

    def cancel_requested(self, run_id: str) -> bool:
        """True when someone (maybe another process) asked to cancel this run."""
        ...


class Runtime:
    """Runs requests through the loop, with recording, cancellation and settling."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        recorder: RunRecorder | None = None,
        policy: ToolPolicy | None = None,
    ) -> None:
        self.registry = registry
        self.recorder: RunRecorder = recorder or NullRecorder()
        self.policy = policy or ToolPolicy(registry)
        self._lock = threading.Lock()
        self._cancelled: set[str] = set()
        self._tasks: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Task[object]]] = {}

    def run_sync(self, request: RunRequest, *, observers: Sequence[Observer] = ()) -> RunOutcome:
        return asyncio.run(self.run(request, observers=observers))

    async def run(
        self,
        request: RunRequest,
        *,
        observers: Sequence[Observer] = (),
        on_start: Callable[[str], None] | None = None,
    ) -> RunOutcome:
        """Run one request. ``on_start`` gets the run id before the first step."""
        started = time.perf_counter()
        run = _Recording(self.recorder)
        run.begin(request)
        if on_start is not None:
            on_start(run.run_id)
        trace = RunTrace(capture_raw=request.options.capture_raw, observers=observers)
        trace.subscribe(run.record_step)  # the step that meets a cancel is still recorded
        trace.subscribe(lambda step: self._check_cancel(run))
        loop = ToolLoop(request.provider, self.registry, policy=self.policy)
        task = asyncio.ensure_future(
            loop.run(
                request.messages, context=request.context, options=request.options, trace=trace
            )
        )
        self._track(run.run_id, task)
        try:
            result = await task
            status, error = RunStatus.COMPLETED, None
        except (RunCancelled, asyncio.CancelledError):
            if not self._forget_cancel(run.run_id) and _outer_cancelled():
                raise
            result, status, error = None, RunStatus.CANCELLED, None
        except ProviderError as exc:
            log.warning("run %s: provider failed: %s", run.run_id, exc)
            result, status, error = None, RunStatus.FAILED, _provider_error_text(exc)
        except Exception:
            log.exception("run %s failed", run.run_id)
            result, status, error = None, RunStatus.FAILED, "the run failed; see the server log"
        finally:
            self._untrack(run.run_id)
        outcome = RunOutcome(
            run_id=run.run_id,
            status=status,
            result=result,
            steps=tuple(trace.steps),
            wall_ms=(time.perf_counter() - started) * 1000,
            error=error,
        )
        return run.settle(outcome)

    def cancel(self, run_id: str) -> bool:
        """Ask a running run to stop; True if it is running in this process."""
        with self._lock:
            entry = self._tasks.get(run_id)
            if entry is None:
                return False
            self._cancelled.add(run_id)
        loop, task = entry
        loop.call_soon_threadsafe(task.cancel)
        return True

    def running(self) -> list[str]:
        with self._lock:
            return list(self._tasks)

    def _check_cancel(self, run: _Recording) -> None:
        with self._lock:
            flagged = run.run_id in self._cancelled
        if flagged or run.cancel_requested():
            with self._lock:
                self._cancelled.add(run.run_id)
            raise RunCancelled(f"run {run.run_id} was cancelled")

    def _track(self, run_id: str, task: asyncio.Task[object]) -> None:
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
    status = f" (HTTP {exc.status})" if exc.status else ""
    return f"the provider call failed: {type(exc).__name__}{status}"


class NullRecorder:
    """Keeps nothing; mints ids. The recorder of a runtime without a store."""

    def begin(self, request: RunRequest) -> str:
        return uuid.uuid4().hex

    def record_step(self, run_id: str, sequence: int, step: RunStep) -> None:
        return None

    def settle(self, outcome: RunOutcome) -> bool:
        return True

    def cancel_requested(self, run_id: str) -> bool:
        return False


class _Recording:
    """One run's view of the recorder: fail-soft, counting sequence numbers, settling once.

    After a failed ``begin`` the store has no row, so nothing more is sent. After a failed
    step, later steps are skipped (the record is already incomplete) but the settle is still
    attempted, so the run does not stay ``running`` in the store.
    """

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder
        self.run_id = ""
        self.sequence = 0
        self.begun = False
        self.store_error: str | None = None

    def begin(self, request: RunRequest) -> None:
        self.run_id = self._guard(lambda: self.recorder.begin(request), "")
        self.begun = bool(self.run_id)
        self.run_id = self.run_id or uuid.uuid4().hex

    def record_step(self, step: RunStep) -> None:
        self.sequence += 1
        sequence = self.sequence
        if self.begun and self.store_error is None:
            self._guard(lambda: self.recorder.record_step(self.run_id, sequence, step), None)

    def cancel_requested(self) -> bool:
        if not self.begun or self.store_error is not None:
            return False
        return self._guard(lambda: self.recorder.cancel_requested(self.run_id), False)

    def settle(self, outcome: RunOutcome) -> RunOutcome:
        if self.store_error is not None:
            outcome = dataclasses.replace(outcome, store_error=self.store_error)
        if self.begun:
            self._guard(lambda: self.recorder.settle(outcome), False)
        if self.store_error is not None and outcome.store_error is None:
            outcome = dataclasses.replace(outcome, store_error=self.store_error)
        return outcome

    def _guard(self, action: Callable[[], T], fallback: T) -> T:
        """Run a store action; a failure is logged and remembered, never raised."""
        try:
            return action()
        except Exception:
            log.exception("the run store failed; run %s goes on without it", self.run_id)
            self.store_error = STORE_FAILED
            return fallback
