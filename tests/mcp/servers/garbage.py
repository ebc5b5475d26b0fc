"""A server speaking raw JSON-RPC over stdio that answers a tool call with garbage.

It completes the handshake and lists two tools. ``mangled`` is answered with a result that is
not a tool result; ``babble`` gets a line that is not JSON at all, and no answer.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [
    {"name": "mangled", "description": "Answers garbage.", "inputSchema": {"type": "object"}},
    {"name": "babble", "description": "Prints noise.", "inputSchema": {"type": "object"}},
]


def reply(message_id: Any, result: Any) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def answer(message: dict[str, Any]) -> None:
    method, message_id = message.get("method"), message.get("id")
    if method == "initialize":
        reply(message_id, {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "garbage", "version": "1"},
        })  # fmt: skip
    elif method == "tools/list":
        reply(message_id, {"tools": TOOLS})
    elif method == "tools/call" and message["params"]["name"] == "mangled":
        reply(message_id, {"content": "this should be a list", "isError": "maybe"})
    elif method == "tools/call":
        sys.stdout.write("<<< not json at all >>>\n")
        sys.stdout.flush()
    elif message_id is not None:
        error = {"code": -32601, "message": "Method not found"}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "error": error}) + "\n")
        sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            answer(json.loads(line))


if __name__ == "__main__":
    main()
