"""The submitting side of the queue: queue a run, queue a decision, follow a run to its end.

``RunQueue`` is what a command, the inspector or a program uses: ``submit`` stores the run
(``queued``, its request sealed: prompt, options, user, workspace file; the provider is the
row's plain reference, never a key) together with its job and returns the run's id at once;
``decide`` queues a person's decision on a waiting queued run; ``run_sync`` submits and waits,
returning the same :class:`toolwire.runs.runtime.RunOutcome` an in-process run returns (its steps
and answer are the store's copies, at the run's privacy level).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable

from toolwire.core.errors import QueueError, StaleDecision
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import CHECKPOINT, QUEUED_REQUEST, Binding, StateKey
from toolwire.loop.state import Pause, RunState
from toolwire.policy.charter import check_operator
from toolwire.policy.trace import RunTrace
from toolwire.queue import engine
from toolwire.queue.checkpoint import Saved
from toolwire.queue.follow import Event, follow
from toolwire.queue.outcome import stored_outcome
from toolwire.runs.resume import chartered, operator_of
from toolwire.runs.runtime import Checked, OperatorDecision, RunOutcome, RunRequest
from toolwire.store.queued import QueuedRuns
from toolwire.store.runs import RunStore

NO_KEY = (
    "queued runs need a state key to seal their requests: set TOOLWIRE_STATE_KEY, the same on "
    "every worker and every process that submits or decides"
)
NO_FILE = (
    "a queued run's workspace must come from a file (load_workspace), so that a worker on "
    "another machine can load it"
)


class RunQueue:
    """Queues runs and decisions on ``store`` (PostgreSQL) for workers to execute."""

    def __init__(self, store: RunStore, key: StateKey | None) -> None:
        engine.require_postgres(store.url)
        if key is None:
            raise QueueError(NO_KEY)
        self.store = store
        self.key = key
        store.seal_with(key)
        self.runs = QueuedRuns(store)

    def submit(self, request: RunRequest) -> str:
        """Store the run with its job; its id. Nothing runs here. The run's charter is made
        now, at the request's level or this store's, and sealed with its request."""
        request = request.chartered(self.store.privacy)
        charter = request.charter
        assert charter is not None
        if charter.workspace is not None and charter.workspace_file is None:
            raise QueueError(NO_FILE)
        run_id = str(uuid.uuid4())
        state = RunState(messages=request.messages, options=request.options, charter=charter)
        text = state.to_json()

        def seal(binding: Binding) -> str:
            return self.key.seal(run_id, text, QUEUED_REQUEST, binding=binding)

        self.runs.submit(run_id, request, seal, engine.defer)
        return run_id

    def decide(self, checked: Checked, decision: OperatorDecision) -> None:
        """Queue ``decision`` (checked by ``Runtime.check``) on its waiting queued run: its
        step is recorded now, and any worker carries the run on. ``StaleDecision`` when
        another decision on the turn was taken first."""
        waiting = checked.waiting
        saved = Saved(state=checked.state, action=decision.action, values=checked.values)
        text = saved.to_json()

        def seal(binding: Binding) -> str:  # bound to the decision's step, stored with it
            return self.key.seal(waiting.run_id, text, CHECKPOINT, binding=binding)

        step = RunTrace().record_decision(checked.state.rounds, decision.action, decision.actor,
                                          decision.reason, decision.digest)  # fmt: skip
        charter = chartered(checked.state)
        check_operator(charter, operator_of(decision))
        queued = self.runs.decide(waiting.run_id, waiting.status, waiting.digest, seal=seal,
                                  step=step, privacy=charter.privacy,
                                  defer=engine.defer)  # fmt: skip
        if not queued:
            raise StaleDecision("another decision on this turn was taken first")

    def events(
        self, run_id: str, pending: Callable[[str], Pause] | None = None, after: int = 0
    ) -> AsyncIterator[Event]:
        """The run's events as its steps are stored: context, steps, end (see ``follow``)."""
        return follow(self.store, run_id, pending=pending, after=after)

    def run_sync(
        self, request: RunRequest, pending: Callable[[str], Pause] | None = None
    ) -> RunOutcome:
        """Submit ``request`` and wait until the run ends or waits for a person."""
        started = time.perf_counter()
        run_id = self.submit(request)
        return asyncio.run(self.wait(run_id, pending=pending, started=started))

    async def wait(
        self,
        run_id: str,
        *,
        pending: Callable[[str], Pause] | None = None,
        started: float | None = None,
        on_event: Callable[[Event], None] | None = None,
        after: int = 0,
    ) -> RunOutcome:
        """The outcome of ``run_id`` once it ends or waits, as the store has it; ``on_event``
        sees each of its events (steps after sequence ``after``) on the way."""
        async for event in follow(self.store, run_id, pending=pending, after=after):
            if on_event is not None:
                on_event(event)
        found = await asyncio.to_thread(self.store.get_run, run_id)
        if found is None:
            raise QueueError("the run is no longer in the store")
        pause = None
        if RunStatus(found.status).waiting and pending is not None:
            pause = pending(run_id)
        return stored_outcome(found, pause, started=started)
