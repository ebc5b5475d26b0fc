"""Where runs are kept: the recorder protocol the audit store implements, an in-memory one for
runtimes without a store, and the fail-soft view one segment of a run has of either.

A recorder failure never breaks a run once it started: :class:`Recording` logs it, remembers
it (the outcome reports it) and goes on without the store. A run that must be recorded
(``required``) does not start when its row cannot be begun: the failure is raised, nothing ran.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from toolwire.core.binding import Binding, Sealer
from toolwire.core.errors import ConfigError, StoreError
from toolwire.core.lifecycle import RunStatus
from toolwire.core.reprs import ident, size, tagged
from toolwire.loop.run import DIRECT_CALL, RunOutcome, RunRequest
from toolwire.policy.charter import Charter, ProviderRef
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.trace import RunStep

log = logging.getLogger("toolwire.runtime")  # a store failure is the run's: the runtime's log
STORE_FAILED = "the run store failed; this run is not fully recorded"
T = TypeVar("T")
Listen = Callable[[str, Callable[[], object]], Callable[[], None]]  # CancelNotices.on_cancel


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
    privacy: PrivacyLevel = PrivacyLevel.METADATA  # the row's level (states before charters)
    version: int | None = None  # the run's seal_version (None: never set, see toolwire.core.latest)
    decided: frozenset[str] = frozenset()  # turns decided, read only when version is None

    def __repr__(self) -> str:
        return tagged(
            "Waiting",
            run_id=ident(self.run_id),
            status=self.status,
            sealed_bytes=size(self.sealed),
            digest=ident(self.digest),
            provider=ident(self.provider.name),
            next_sequence=self.next_sequence,
            version=self.version,
        )


class RunRecorder(Protocol):
    """Where runs are kept: the audit store implements this."""

    def begin(self, request: RunRequest) -> str:
        """Create the run row (status running) and return its id."""
        ...

    def keep(self, run_id: str, charter: Charter) -> None:
        """Keep every later step and the ending of ``run_id`` as ``charter`` says (its
        privacy level), in this process, whatever this recorder's own level is."""
        ...

    def record_step(self, run_id: str, sequence: int, step: RunStep) -> None: ...

    def settle(self, outcome: RunOutcome) -> bool:
        """Set the terminal state once, erasing any sealed state; a second settle is ignored."""
        ...

    def cancel_requested(self, run_id: str) -> bool:
        """True when someone (maybe another process) asked to cancel this run."""
        ...

    def suspend(self, run_id: str, status: RunStatus, seal: Sealer, digest: str) -> bool:
        """Move a running run to ``status`` with the state ``seal`` seals for the binding the
        recorder gives it (see :mod:`toolwire.core.latest`); False if a cancel won."""
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


def require_recorder(recorder: RunRecorder) -> RunRecorder:
    """``recorder``, if it has every method the runtime calls; a clear error for a recorder
    written before runs had charters (it lacks ``keep``)."""
    if not callable(getattr(recorder, "keep", None)):
        raise ConfigError(
            f"{type(recorder).__name__} is not a RunRecorder: it lacks keep(run_id, charter), "
            "which keeps a run carried on in this process at its own privacy level"
        )
    return recorder


class CancelNotices(Protocol):
    """A recorder that can tell a running segment of a cancel made anywhere, another process
    included, without the segment asking (the audit store does; a ``MemoryRecorder`` has no
    other process to hear from)."""

    def on_cancel(self, run_id: str, notify: Callable[[], object]) -> Callable[[], None]:
        """Call ``notify`` (on any thread, at most once) once the run is cancelled, at once if
        it already is; returns what stops listening."""
        ...


class MemoryRecorder:
    """Keeps waiting runs in memory and nothing else; mints ids. For runtimes without a store.

    A run suspended here can be resumed by the same process only. How a held call ended is
    kept until its caller takes the answer (see :mod:`toolwire.runs.held`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refs: dict[str, ProviderRef] = {}
        self._sequences: dict[str, int] = {}
        self._waiting: dict[str, Waiting] = {}
        self._versions: dict[str, int] = {}
        self._cancelled: set[str] = set()
        self._held: set[str] = set()
        self._ended: dict[str, RunStatus] = {}
        self._answers: dict[str, str] = {}

    def begin(self, request: RunRequest) -> str:
        run_id = uuid.uuid4().hex
        with self._lock:
            self._refs[run_id] = request.provider_ref
        return run_id

    def keep(self, run_id: str, charter: Charter) -> None:
        pass  # nothing is kept but waiting runs, whose charter is sealed in their state

    def record_step(self, run_id: str, sequence: int, step: RunStep) -> None:
        with self._lock:
            self._sequences[run_id] = sequence

    def settle(self, outcome: RunOutcome) -> bool:
        with self._lock:
            self._waiting.pop(outcome.run_id, None)
            self._sequences.pop(outcome.run_id, None)
            self._versions.pop(outcome.run_id, None)
            settled = self._refs.pop(outcome.run_id, None) is not None
            if settled:
                cancelled = outcome.run_id in self._cancelled
                self._end(outcome.run_id, RunStatus.CANCELLED if cancelled else outcome.status)
            return settled

    def cancel_requested(self, run_id: str) -> bool:
        return run_id in self._cancelled

    def suspend(self, run_id: str, status: RunStatus, seal: Sealer, digest: str) -> bool:
        with self._lock:
            if run_id in self._cancelled or run_id not in self._refs:
                return False
            version = self._versions.get(run_id, 0) + 1
            last = self._sequences.get(run_id, 0)
            self._versions[run_id] = version
            self._waiting[run_id] = Waiting(
                run_id=run_id, status=status, digest=digest, provider=self._refs[run_id],
                sealed=seal(Binding(version=version, sequence=last)), next_sequence=last + 1,
                version=version,
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
            self._versions[run_id] = self._versions.get(run_id, 0) + 1  # its state is dead
            return True

    def request_cancel(self, run_id: str) -> bool:
        with self._lock:
            if run_id not in self._refs:
                return False
            self._cancelled.add(run_id)
            if self._waiting.pop(run_id, None) is not None:
                self._refs.pop(run_id, None)
                self._versions.pop(run_id, None)
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


class Recording:
    """One segment's view of the recorder: fail-soft, counting sequence numbers.

    After a failed ``begin`` the store has no row, so nothing more is sent. After a failed
    step, later steps are skipped (the record is already incomplete) but the settle is still
    attempted, so the run does not stay ``running`` in the store.
    """

    def __init__(
        self, recorder: RunRecorder, *, run_id: str = "", sequence: int = 0, required: bool = False
    ) -> None:
        self.recorder = recorder
        self.run_id = run_id
        self.sequence = sequence
        self.begun = bool(run_id)
        self.required = required
        self.store_error: str | None = None

    def begin(self, request: RunRequest) -> None:
        """Begin the run's row; ``required``: a failure is raised (a ``StoreError``)."""
        if self.required:
            try:
                self.run_id = self.recorder.begin(request)
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"the run store could not begin a run: {exc}") from exc
            self.begun = True
            return
        self.run_id = self.guard(lambda: self.recorder.begin(request), "")
        self.begun = bool(self.run_id)
        self.run_id = self.run_id or uuid.uuid4().hex

    def record_step(self, step: RunStep) -> None:
        """Every step of a run comes here: what :meth:`guard` does, without its frames."""
        self.sequence += 1
        if self.begun and self.store_error is None:
            try:
                self.recorder.record_step(self.run_id, self.sequence, step)
            except Exception:
                self._failed()

    def cancel_requested(self) -> bool:
        """Asked after every step: what :meth:`guard` does, without its frames."""
        if not self.begun or self.store_error is not None:
            return False
        try:
            return self.recorder.cancel_requested(self.run_id)
        except Exception:
            self._failed()
            return False

    def on_cancel(self, notify: Callable[[], object]) -> Callable[[], None]:
        """Have ``notify`` called once the run is cancelled from anywhere, when the recorder
        can say so (see :class:`CancelNotices`); returns what stops listening."""
        # An attribute look-up, not isinstance: a runtime-checkable protocol costs a plain
        # run several microseconds, on every segment of every run.
        listen: Listen | None = getattr(self.recorder, "on_cancel", None)
        if listen is None or not self.begun:
            return _nothing
        return self.guard(lambda: listen(self.run_id, notify), _nothing)

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
            self._failed()
            return fallback

    def _failed(self) -> None:
        """A store action failed (called in its ``except`` block, so the log has the traceback):
        logged and remembered."""
        log.exception("the run store failed; run %s goes on without it", self.run_id, stacklevel=2)
        self.store_error = STORE_FAILED


def _nothing() -> None:
    return None
