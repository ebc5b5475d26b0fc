"""The stdio transport against a real child: lines framed across and within reads, a line of
exactly the limit delivered, one byte more refused (the stream ends, the refusal is kept and
reported), a line that is not a message handed over as an exception, the child stopped."""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import anyio
from mcp import StdioServerParameters
from mcp.shared.message import SessionMessage

from toolwire.core.children import child_environment
from toolwire.mcp.stdio import LineTooLong, StdioTransport

LIMIT = 200
# Writes each argument (base64) as one write of its own, a moment apart, then waits for stdin
# to close: what a server's framing looks like from the reading end.
WRITER = """
import base64, os, sys, time
for part in sys.argv[1:]:
    os.write(1, base64.b64decode(part))
    time.sleep(0.05)
sys.stdin.read()
"""


def message(method: str, size: int | None = None) -> bytes:
    """A JSON-RPC notification, padded with JSON whitespace to ``size`` bytes."""
    head, tail = b'{"jsonrpc": "2.0",', f'"method": "{method}"}}'.encode()
    pad = 0 if size is None else size - len(head) - len(tail)
    assert pad >= 0
    return head + b" " * pad + tail


def exchange(*writes: bytes) -> tuple[list[Any], StdioTransport, int]:
    """What the session reads from a child making ``writes``, the transport, and how often it
    reported a refusal."""
    refusals: list[None] = []
    args = ["-c", WRITER, *(base64.b64encode(w).decode() for w in writes)]
    params = StdioServerParameters(command=sys.executable, args=args, env=child_environment())

    async def scenario(transport: StdioTransport) -> list[Any]:
        received: list[Any] = []
        async with transport.streams() as (read, _write):
            with anyio.fail_after(20):
                async for item in read:
                    received.append(item)
                    if isinstance(item, SessionMessage) and "last" in str(item.message):
                        break
        return received

    with open(os.devnull, "w") as errlog:
        transport = StdioTransport("writer", params, errlog=errlog,
                                   on_refused=lambda: refusals.append(None),
                                   max_line_bytes=LIMIT)  # fmt: skip
        received = anyio.run(scenario, transport)
    return received, transport, len(refusals)


def methods(received: list[Any]) -> list[str]:
    """Each notification's method; for an exception, its type."""
    return [
        str(getattr(item.message, "method", item.message))
        if isinstance(item, SessionMessage)
        else type(item).__name__
        for item in received
    ]


def test_lines_are_framed_across_reads_and_a_line_of_the_limit_is_delivered() -> None:
    one, two, split = message("one"), message("two"), message("split")
    full = message("full", size=LIMIT)
    received, transport, refusals = exchange(
        one + b"\n" + two + b"\n" + split[:9], split[9:] + b"\n" + full, b"\n" + message("last")
        + b"\n"
    )  # fmt: skip
    assert methods(received) == ["one", "two", "split", "full", "last"]
    assert (transport.refused, refusals) == (None, 0)


def test_a_line_that_is_not_a_message_is_handed_over_and_the_next_still_arrives() -> None:
    received, _, refusals = exchange(b"<<< not json >>>\n", b"\n", message("last") + b"\n")
    assert methods(received) == ["ValidationError", "ValidationError", "last"]
    assert refusals == 0


def test_a_line_one_byte_over_the_limit_is_refused_and_the_stream_ends() -> None:
    over = message("over", size=LIMIT + 1)
    received, transport, refusals = exchange(message("first") + b"\n", over[:150], over[150:])
    assert methods(received) == ["first"]  # the stream ended: no "last" ever came
    assert isinstance(transport.refused, LineTooLong)
    assert str(transport.refused) == (
        f"writer: wrote a stdout line over {LIMIT} bytes (the limit of one message); "
        "the connection is closed and the server stopped"
    )
    assert refusals == 1


def test_a_line_over_the_limit_is_refused_before_its_newline_comes() -> None:
    received, transport, _ = exchange(b"x" * (LIMIT * 3))  # and then nothing, for ever
    assert methods(received) == []
    assert transport.refused is not None
