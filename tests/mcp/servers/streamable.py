"""An MCP server over streamable HTTP on 127.0.0.1:PORT that wants ``Authorization: TOKEN``.

Run as ``python streamable.py PORT TOKEN``. Requests without the header, or with another value, get
401. The ``whoami`` tool answers with the header it was called with.
"""

from __future__ import annotations

import sys

import uvicorn
from mcp.server import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

app = MCPServer("remote-notes")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class RequireToken:
    def __init__(self, inner: ASGIApp, token: str) -> None:
        self.inner, self.token = inner, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != self.token.encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await self.inner(scope, receive, send)


def main() -> None:
    port, token = int(sys.argv[1]), sys.argv[2]
    asgi = RequireToken(app.streamable_http_app(), token)
    uvicorn.run(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
