"""The inspector and runs it does not execute itself: queued runs, and any run followed live.

- ``GET /api/runs/{id}/stream`` follows any stored run, wherever it executes (a queue worker,
  another process): the same NDJSON events as a local run (``context``, ``step`` per stored
  step, one ``end``), read from the store as they are stored, at the run's privacy level.
- With ``toolwire serve --queue`` (``InspectorSettings.queue_runs``) a run started from the
  page or the API is queued for the workers: ``POST /api/runs`` answers at once with its id,
  and ``POST /api/runs/stream`` streams it as above.
- A decision on a queued run is queued too (any worker carries the run on); its stream follows
  the run from the decision on.

The inspector holds a :class:`~toolwire.queue.RunQueue` whenever its store is PostgreSQL and it
has the state key, so that decisions on queued runs work even without ``--queue``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi.responses import StreamingResponse

from toolwire.core.errors import QueueError
from toolwire.inspector.errors import ApiError
from toolwire.inspector.service import LiveRun, refusal
from toolwire.inspector.settings import InspectorSettings
from toolwire.inspector.stream import NDJSON, STREAM_HEADERS, RequestDeltas, encode_line
from toolwire.runs.runtime import QUEUED_RUN, OperatorDecision, Runtime, Waiting

if TYPE_CHECKING:
    from toolwire.queue import RunQueue
    from toolwire.store import RunStore

Event = dict[str, Any]


def queue_of(settings: InspectorSettings) -> RunQueue | None:
    """The queue on the settings' store, when it is PostgreSQL and there is a state key.

    ``QueueError`` when runs should be queued (``queue_runs``) and cannot be."""
    from toolwire.queue import RunQueue
    from toolwire.store import RunStore

    store = settings.store
    if not isinstance(store, RunStore) or store.url.get_backend_name() != "postgresql":
        if settings.queue_runs:
            from toolwire.queue.engine import NOT_POSTGRES

            raise QueueError(NOT_POSTGRES)
        return None
    try:
        return RunQueue(store, settings.state_key)
    except QueueError:
        if settings.queue_runs:
            raise
        return None


async def submit(queue: RunQueue, live: LiveRun) -> str:
    """Queue the run ``live`` describes; its id."""
    return await asyncio.to_thread(queue.submit, live.request)


async def stream(
    store: RunStore,
    runtime: Runtime,
    run_id: str,
    *,
    context: Event | None = None,
    after: int = 0,
) -> AsyncIterator[bytes]:
    """The run's events as NDJSON lines, from the step after ``after``; ``context`` (a local
    run's context line) goes first, with the followed run's own fields added."""
    from toolwire.queue.follow import follow

    deltas = RequestDeltas()
    async for event in follow(store, run_id, pending=runtime.pending, after=after):
        local = context if event["type"] == "context" else None
        yield encode_line(deltas.encode(event if local is None else {**local, **event}))


def response(
    settings: InspectorSettings,
    runtime: Runtime,
    run_id: str,
    *,
    context: Event | None = None,
    after: int = 0,
) -> StreamingResponse:
    """The stream of a stored run (see ``stream``)."""
    events = stream(_store(settings), runtime, run_id, context=context, after=after)
    return StreamingResponse(events, media_type=NDJSON, headers=STREAM_HEADERS)


async def check_stored(settings: InspectorSettings, run_id: str) -> None:
    """404 unless the store holds ``run_id``."""
    from toolwire.store import RunStore

    store = settings.store
    if not isinstance(store, RunStore) or await asyncio.to_thread(store.progress, run_id) is None:
        raise ApiError(404, "no stored run has this id")


async def decide(
    settings: InspectorSettings,
    runtime: Runtime,
    queue: RunQueue | None,
    waiting: Waiting,
    decision: OperatorDecision,
) -> StreamingResponse:
    """Queue ``decision`` on the waiting queued run; stream the run from the decision on.
    Every refusal comes before the stream, as for a run resumed here."""
    if queue is None:
        raise ApiError(409, QUEUED_RUN, code="queued")
    try:
        checked = await asyncio.to_thread(runtime.check, waiting.run_id, decision)
        await asyncio.to_thread(queue.decide, checked, decision)
    except Exception as exc:
        raise refusal(exc) from None
    context = {"type": "context", "resumed": True}
    return response(settings, runtime, waiting.run_id, context=context,
                    after=waiting.next_sequence - 1)  # fmt: skip


def _store(settings: InspectorSettings) -> RunStore:
    from toolwire.store import RunStore

    store = settings.store
    assert isinstance(store, RunStore)  # a followed run has a real store
    return store
