"""The HTTP client of a streamable-HTTP MCP server: what it answers is read within a bound.

The SDK's transport reads a JSON answer whole (``response.aread()``), however large it is, and
bounds one server-sent event only by its own default. :class:`BoundedHttp` gives the SDK an
``httpx2`` client whose transport counts what each response body brings: a JSON answer (or any
body that is not an event stream) is refused past ``STDOUT_LINE_BYTES``, the same limit as one
stdio message, and so is one event of an event stream, counted from the blank line that ended
the one before. The SDK's own event bound is set to the same limit.

Invariants:
- A refusal is kept in ``refused`` (the server and the limit, never a byte of the body) before
  the response's stream fails, so whoever's request fails then can say why; the body is closed,
  nothing more of it is read. The session itself stays open: a later request is answered.
- A body announcing a ``Content-Length`` over the limit is refused before any of it is read.
- The client keeps the SDK's timeouts (30 s to connect, write and wait, 300 s between reads of
  a held stream) and sends the headers the workspace names; a server that asks for OAuth gets
  its ``auth`` (:mod:`toolwire.mcp.auth`), whose own requests are bounded the same way.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx2
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from toolwire.mcp.stdio import STDOUT_LINE_BYTES

log = logging.getLogger("toolwire.mcp")

_EVENT_ENDS = (b"\n\n", b"\r\n\r\n", b"\r\r")  # a blank line ends an event (the SSE spec's)


class BodyTooLarge(httpx2.StreamError):
    """A server's answer over the limit; the message names the server and the limit."""

    def __init__(self, server: str, limit: int, event: bool) -> None:
        super().__init__(f"{server}: {refusal(limit, event)}")
        self.server = server
        self.limit = limit


def refusal(limit: int, event: bool) -> str:
    what = "an event" if event else "an answer"
    return f"sent {what} over {limit} bytes (the limit of one message); it was not read"


class BoundedHttp:
    """The bounded client of one server: :meth:`client` makes it, ``refused`` says why the
    last refused answer was refused (None when none was)."""

    def __init__(
        self, server: str, max_bytes: int = STDOUT_LINE_BYTES, auth: httpx2.Auth | None = None
    ) -> None:
        self.server = server
        self.max_bytes = max_bytes
        self.auth = auth
        self.refused: BodyTooLarge | None = None

    def client(
        self, headers: dict[str, str], inner: httpx2.AsyncBaseTransport | None = None
    ) -> httpx2.AsyncClient:
        """A client sending ``headers`` over ``inner`` (HTTP itself unless told), bounded."""
        timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
        transport = _Transport(inner or httpx2.AsyncHTTPTransport(), self)
        return httpx2.AsyncClient(
            headers=headers, timeout=timeout, transport=transport, auth=self.auth
        )

    def refuse(self, event: bool) -> BodyTooLarge:
        self.refused = BodyTooLarge(self.server, self.max_bytes, event)
        log.warning("MCP server %r %s", self.server, refusal(self.max_bytes, event))
        return self.refused


class _Transport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, bound: BoundedHttp) -> None:
        self.inner = inner
        self.bound = bound

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        assert isinstance(response.stream, httpx2.AsyncByteStream)  # an async transport's
        stream = _Counted(response.stream, self.bound, event=kind == "text/event-stream")
        announced = response.headers.get("content-length", "")
        if not stream.event and announced.isdigit() and int(announced) > self.bound.max_bytes:
            stream.refused_at_once = True
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=stream,
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Counted(httpx2.AsyncByteStream):
    """A response body that fails once it brings more than the bound allows."""

    def __init__(self, inner: httpx2.AsyncByteStream, bound: BoundedHttp, *, event: bool) -> None:
        self.inner = inner
        self.bound = bound
        self.event = event
        self.refused_at_once = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        limit = self.bound.max_bytes
        if self.refused_at_once:
            await self.inner.aclose()
            raise self.bound.refuse(self.event)
        held = 0  # bytes of the whole body, or of the event still open
        tail = b""  # the end of the bytes before, where an event's end may begin
        async for chunk in self.inner:
            if self.event:
                seen = tail + chunk
                ends = [at + len(end) for end in _EVENT_ENDS if (at := seen.rfind(end)) >= 0]
                held = len(seen) - max(ends) if ends else held + len(chunk)
                tail = seen[-3:]
            else:
                held += len(chunk)
            if held > limit:
                await self.inner.aclose()
                raise self.bound.refuse(self.event)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()
