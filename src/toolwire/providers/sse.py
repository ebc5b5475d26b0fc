"""Server-sent events read from raw bytes, with memory bounded whatever the server sends.

A line-based reader (httpx's ``aiter_lines``, which ``httpx_sse`` builds on) keeps every byte
of an unfinished line: a server that streams bytes and never ends a line or an event grows it
without limit, and a silence timer never fires while bytes keep coming. This decoder counts
instead, and refuses as soon as a count passes its cap:

- ``MAX_STREAM_BYTES``: every byte the stream delivered, events and all else (comments, blank
  lines, fields nobody reads). A whole answer is capped the same way.
- ``MAX_EVENT_BYTES``: the bytes of the one event not yet ended (its data lines so far and the
  line being read). One event is one delta or one whole part (Gemini sends a whole call's
  arguments in one); a megabyte of it unended is a broken or hostile server.

Parsing follows the WHATWG event-stream rules: lines end in CRLF, LF or CR; a blank line ends
an event; ``data`` lines are joined with newlines; ``event`` names it; a line starting with
``:`` is a comment; one space after the colon is dropped; other fields are ignored. An event
with no data is not dispatched. Bytes that are not UTF-8 become U+FFFD.

A ``StreamFormat`` names a stream's media type and its decoder; server-sent events are the
default one, and every decoder (AWS's binary event stream, :mod:`toolwire.providers.
eventstream`) is bound by the same two caps, and raises ``MalformedStream`` for bytes that are
no event at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

MAX_STREAM_BYTES = 8 * 1024 * 1024  # a streamed turn is kilobytes; megabytes mean a broken server
MAX_EVENT_BYTES = 1024 * 1024  # one delta, or one whole call's arguments, with room to spare
_LINE_END = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class Event:
    """One dispatched event: its name (``""`` when it had none) and its joined data."""

    event: str
    data: str


class StreamTooLarge(Exception):
    """A cap was passed; ``limit`` names it, ``size`` is its value in bytes."""

    def __init__(self, limit: str, size: int) -> None:
        super().__init__(limit)
        self.limit = limit
        self.size = size


class MalformedStream(Exception):
    """The stream's bytes are not events of its framing; the message says what is wrong."""


class StreamDecoder(Protocol):
    """Takes a stream's bytes in pieces and returns the events each piece completed."""

    def feed(self, chunk: bytes) -> list[Event]: ...


@dataclass(frozen=True, slots=True)
class StreamFormat:
    """A stream's framing: the media type a server answers it with, and its decoder."""

    media_type: str
    decoder: Callable[[], StreamDecoder]


class EventDecoder:
    """Takes the stream's bytes in pieces and returns the events each piece completed."""

    def __init__(self) -> None:
        self._pending = b""  # the line being read, not yet ended
        self._after_cr = False  # the last piece ended in CR: a LF starting the next is its end
        self._data: list[str] = []
        self._event = ""
        self._event_bytes = 0  # bytes of the lines of the event being read
        self._total = 0

    @property
    def total_bytes(self) -> int:
        return self._total

    def feed(self, chunk: bytes) -> list[Event]:
        self._total += len(chunk)
        if self._total > MAX_STREAM_BYTES:
            raise StreamTooLarge("MAX_STREAM_BYTES", MAX_STREAM_BYTES)
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._after_cr = chunk.endswith(b"\r")
        lines = _LINE_END.split(self._pending + chunk)
        self._pending = lines.pop()
        events: list[Event] = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        if self._event_bytes + len(self._pending) > MAX_EVENT_BYTES:
            raise StreamTooLarge("MAX_EVENT_BYTES", MAX_EVENT_BYTES)
        return events

    def _line(self, raw: bytes) -> Event | None:
        if not raw:
            return self._dispatch()
        self._event_bytes += len(raw) + 1
        if self._event_bytes > MAX_EVENT_BYTES:
            raise StreamTooLarge("MAX_EVENT_BYTES", MAX_EVENT_BYTES)
        if raw.startswith(b":"):
            return None
        name, _, value = raw.decode("utf-8", "replace").partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

    def _dispatch(self) -> Event | None:
        data, event = self._data, self._event
        self._data, self._event, self._event_bytes = [], "", 0
        if not data:
            return None
        return Event(event, "\n".join(data))


SSE = StreamFormat("text/event-stream", EventDecoder)
