"""The event store of ``toolwire mcp --http``: what a host that reconnects is sent again.

Every message the server sends on a streamable-HTTP event stream is kept with an event id, and
every stream opens with a priming event (an id, no data) and a ``retry:`` of ``RETRY_MS``, so a
host whose stream ends, its own doing or the server's, reconnects with ``Last-Event-ID`` and is
sent what followed on that stream: the answer of a held call that was decided meanwhile too.

- One store per session (:func:`for_each_session`): the SDK names a request's stream by the
  request's JSON-RPC id, which another session may use as well, so a shared store could replay
  one host's messages to another. An event id is unguessable besides (a random prefix per store).
- Bounded: at most ``MAX_EVENTS`` per session, oldest dropped first; a host that comes back
  after more than that is sent nothing again (its ``Last-Event-ID`` is unknown) and asks anew.
- In memory: a server that restarts remembers nothing, as its sessions are gone too.
"""

from __future__ import annotations

import itertools
import secrets
from collections import OrderedDict
from typing import Any

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import JSONRPCMessage

MAX_EVENTS = 1_000  # a held call's progress every 10 s for hours, and its answer
RETRY_MS = 2_000  # how long a host waits before it reconnects
_PREFIX_BYTES = 12


class BoundedEventStore(EventStore):
    """One session's events, in the order they were stored, at most ``max_events``."""

    def __init__(self, max_events: int = MAX_EVENTS) -> None:
        self.max_events = max_events
        self._prefix = secrets.token_urlsafe(_PREFIX_BYTES)
        self._numbers = itertools.count(1)
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()

    def __repr__(self) -> str:  # how many, never what
        return f"BoundedEventStore(events={len(self._events)}, max_events={self.max_events})"

    @property
    def size(self) -> int:  # not ``__len__``: the SDK asks an empty store whether it is one
        return len(self._events)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = f"{self._prefix}-{next(self._numbers)}"
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self.max_events:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        """Send every message of ``last_event_id``'s stream stored after it; that stream's id,
        or None for an event id this store does not hold (forgotten, or another's)."""
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id, after = found[0], False
        for event_id, (stream, message) in list(self._events.items()):
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id


class _PerSession(StreamableHTTPSessionManager):
    """The SDK's session manager, handing each new session a store of its own (it reads
    ``event_store`` once for each session it admits)."""

    def __init__(self, app: Any, *, max_events: int, **settings: Any) -> None:
        self.max_events = max_events
        super().__init__(app, **settings)

    @property
    def event_store(self) -> EventStore:
        return BoundedEventStore(self.max_events)

    @event_store.setter
    def event_store(self, value: EventStore | None) -> None:
        """Ignored: the store is made for each session."""


def for_each_session(
    server: Any, max_events: int = MAX_EVENTS, **settings: Any
) -> StreamableHTTPSessionManager:
    """A session manager for ``server`` whose every session has its own bounded event store,
    and whose streams tell hosts to come back after ``RETRY_MS``."""
    return _PerSession(server, max_events=max_events, retry_interval=RETRY_MS, **settings)
