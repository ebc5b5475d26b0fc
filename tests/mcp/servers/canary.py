"""An MCP server whose results hold canaries everywhere but in their text.

``probe(n)`` answers with the text ``probe n answered``; its structured content and its image
hold the canary $CANARY_<n> (the image's bytes are the canary, so its base64 does too).
"""

from __future__ import annotations

import base64
import os

from mcp.server import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent

app = MCPServer("canary")


@app.tool()
def probe(n: int) -> CallToolResult:
    """Answer with a text, structured content and an image."""
    secret = os.environ[f"CANARY_{n}"]
    picture = base64.b64encode(b"\x89PNG\r\n\x1a\n" + secret.encode()).decode()
    return CallToolResult(
        content=[
            TextContent(type="text", text=f"probe {n} answered"),
            ImageContent(type="image", data=picture, mime_type="image/png"),
        ],
        structured_content={"rows": [{"n": n, "secret": secret}]},
    )


if __name__ == "__main__":
    app.run()
