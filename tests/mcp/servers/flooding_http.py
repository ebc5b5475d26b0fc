"""An MCP server over streamable HTTP on 127.0.0.1:PORT whose ``flood_answer`` and
``flood_event`` tools answer without end: a JSON body, or one server-sent event, of MEGABYTES
MB and more, never finished. ``add`` answers as usual.

Run as ``python flooding_http.py PORT MEGABYTES``.
"""

from __future__ import annotations

import json
import sys

import uvicorn
from mcp.server import MCPServer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

app = MCPServer("flooding")
CHUNK = b"x" * 65536


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@app.tool()
def flood_answer() -> str:
    """Answers a JSON body without end."""
    return ""


@app.tool()
def flood_event() -> str:
    """Answers one server-sent event without end."""
    return ""


class Flooding:
    def __init__(self, inner: ASGIApp, megabytes: int) -> None:
        self.inner, self.megabytes = inner, megabytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.inner(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        name = request.get("params", {}).get("name") if isinstance(request, dict) else None
        if name in ("flood_answer", "flood_event"):
            await self.flood(send, event=name == "flood_event")
            return
        replayed = [{"type": "http.request", "body": body, "more_body": False}]

        async def again() -> Message:
            return replayed.pop() if replayed else await receive()

        await self.inner(scope, again, send)

    async def flood(self, send: Send, *, event: bool) -> None:
        kind = b"text/event-stream" if event else b"application/json"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", kind)]})  # fmt: skip
        start = b'event: message\ndata: {"jsonrpc": "2.0", "id": 2, "result": "' if event else b'{"'
        await send({"type": "http.response.body", "body": start, "more_body": True})
        try:
            for _ in range(self.megabytes * 16):
                await send({"type": "http.response.body", "body": CHUNK, "more_body": True})
        except OSError:
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def main() -> None:
    port, megabytes = int(sys.argv[1]), int(sys.argv[2])
    asgi = Flooding(app.streamable_http_app(), megabytes)
    uvicorn.run(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
