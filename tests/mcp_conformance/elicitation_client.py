"""A client for the conformance suite's elicitation scenarios, made of toolwire's own client.

The suite runs ``python elicitation_client.py <server url>``: this connects to the scenario's
server as toolwire connects to any streamable-HTTP server (:class:`toolwire.mcp.connection.
Connection`), lists its tools and calls each. A question the server asks is answered as a
person accepting the form as shown: the form is read, and the answer checked and filled with
its defaults, by :mod:`toolwire.mcp.form`, and returned through :mod:`toolwire.mcp.elicit`.
"""

from __future__ import annotations

import asyncio
import sys

from toolwire.mcp.asks import Ask, Reply
from toolwire.mcp.caller import Caller
from toolwire.mcp.connection import Connection
from toolwire.mcp.form import checked_answer
from toolwire.workspace.mcp_servers import Launch

TIMEOUT_S = 20.0


async def accept_as_shown(ask: Ask) -> Reply:
    """A person pressing accept without changing a field."""
    return Reply(action="accept", content=checked_answer(ask.fields, {}), by="conformance")


async def main(url: str) -> int:
    connection = Connection(Launch(name="conformance", url=url, timeout=TIMEOUT_S))
    try:
        for tool in await connection.list_tools():
            caller = Caller(server="conformance", tool=tool.name, data_class="public",
                            turn=None, loop=asyncio.get_running_loop(),
                            answerer=accept_as_shown)  # fmt: skip
            result = await connection.call(tool.name, {}, caller)
            print(tool.name, "error" if result.is_error else "answered")
    finally:
        await connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
