"""AWS's binary event stream (``application/vnd.amazon.eventstream``), read from raw bytes with
memory bounded, decoded by botocore's own parser (``botocore.eventstream.EventStreamBuffer``).

A frame is a prelude (total and header lengths, and its CRC32), typed headers, a payload and the
CRC32 of the whole frame; botocore checks both CRCs and the lengths. This decoder adds what the
server-sent events decoder (:mod:`toolwire.providers.sse`) holds to:

- ``MAX_STREAM_BYTES``: every byte the stream delivered, frames and all;
- ``MAX_EVENT_BYTES``: the bytes of the one frame not yet complete (botocore itself waits for up
  to 24 MiB of payload), so a server announcing a huge frame fails at a megabyte.

A frame is an ``Event`` of the framing the HTTP layer reads: an ``event`` frame is named by its
``:event-type`` header, its payload (JSON) the event's data. An ``exception`` frame (the API's
error inside the stream, ``:exception-type`` naming it) or an ``error`` frame (``:error-code``,
``:error-message``) becomes an ``error`` event whose data is ``{"error": {"code", "type",
"message"}}``, with the HTTP status the API's model gives that error as its code (``statuses``),
so the HTTP layer raises it typed (a throttling exception is a ``RateLimitError``) like an error
reported in any other stream. A frame botocore cannot parse (a CRC that does not match, a
length out of bounds, a duplicated header), a frame of no known message type and an event
frame with no ``:event-type`` are a ``MalformedStream`` saying which.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolwire.providers.sse import (
    MAX_EVENT_BYTES,
    MAX_STREAM_BYTES,
    Event,
    MalformedStream,
    StreamFormat,
    StreamTooLarge,
)

MEDIA_TYPE = "application/vnd.amazon.eventstream"
_MESSAGE_CHARS = 2_000  # an error's message, not a document; the HTTP layer shortens it further


class AwsEventDecoder:
    """Takes the stream's bytes in pieces and returns the events each piece completed."""

    def __init__(self, statuses: Mapping[str, int]) -> None:
        from botocore.eventstream import EventStreamBuffer

        self._buffer = EventStreamBuffer()
        self._statuses = statuses
        self._total = 0  # bytes fed
        self._framed = 0  # bytes of the frames parsed so far

    def feed(self, chunk: bytes) -> list[Event]:
        from botocore.eventstream import ParserError

        self._total += len(chunk)
        if self._total > MAX_STREAM_BYTES:
            raise StreamTooLarge("MAX_STREAM_BYTES", MAX_STREAM_BYTES)
        self._buffer.add_data(chunk)
        events: list[Event] = []
        try:
            for message in self._buffer:
                self._framed += message.prelude.total_length
                events.append(self._event(message.headers, message.payload))
        except ParserError as exc:
            raise MalformedStream(f"a frame that does not parse ({exc})") from None
        if self._total - self._framed > MAX_EVENT_BYTES:
            raise StreamTooLarge("MAX_EVENT_BYTES", MAX_EVENT_BYTES)
        return events

    def _event(self, headers: Mapping[str, Any], payload: bytes) -> Event:
        kind = headers.get(":message-type")
        if kind == "event":
            name = headers.get(":event-type")
            if not isinstance(name, str) or not name:
                raise MalformedStream("an event frame without an :event-type header")
            return Event(name, payload.decode("utf-8", "replace"))
        if kind == "exception":
            name = _str(headers.get(":exception-type")) or "exception"
            return self._error(name, _message_of(payload))
        if kind == "error":
            name = _str(headers.get(":error-code")) or "error"
            return self._error(name, _str(headers.get(":error-message")))
        raise MalformedStream(f"a frame of message type {str(kind)[:40]!r}, not event or exception")

    def _error(self, name: str, message: str) -> Event:
        status = self._statuses.get(name)
        detail = {"code": str(status) if status else name, "type": name, "message": message}
        return Event("error", json.dumps({"error": detail}))


def aws_event_stream(statuses: Mapping[str, int]) -> StreamFormat:
    """The framing of an AWS API's streams whose in-stream errors have ``statuses``."""
    return StreamFormat(MEDIA_TYPE, lambda: AwsEventDecoder(statuses))


def _message_of(payload: bytes) -> str:
    """An exception frame's message: its JSON payload's ``message``, else the payload's text."""
    text = payload.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return text[:_MESSAGE_CHARS]
    message = body.get("message") or body.get("Message") if isinstance(body, dict) else None
    return (message if isinstance(message, str) else text)[:_MESSAGE_CHARS]


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
