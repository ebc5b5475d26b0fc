"""A remote (MCP) tool over stdio: toolwire's overhead per call, and the first call's start-up.

1. Per call: server-everything's ``echo`` called through toolwire's seam (``Seam.invoke`` on a
   registered ``RemoteTool``: the gate's offered-set check, the hop to the hub's event loop,
   the conversion to a ``ToolResult``, both channels bounded) against the same server called
   with the bare SDK client (``mcp.Client.call_tool``) on the caller's own loop. Each side has
   its own server process, started before timing; best of interleaved batches in one process.
   ``echo`` does nothing, so the ratio is the worst case; what a real tool costs only adds to
   both sides. Target: toolwire adds at most 0.5 ms a call. What that pays for: the hop to the
   hub's loop and back (two thread wake-ups, each a scheduling delay on a busy machine), the
   per-call timeout, the conversion to a typed result and the bounds.
2. Start-up: the first listing of a server nobody has started (spawn, handshake, tools/list)
   through toolwire (what ``toolwire run`` and ``toolwire tools`` wait for), against the bare
   client doing the same; then the first call. Best of five, each on a fresh process.

Needs the npm servers: ``npm ci --prefix tests/mcp_servers`` (``scripts/test`` runs it).
Run: python -m bench.mcp     (as a module: run as a file, its name would hide the SDK's).
Prints µs per call, the ratio, the start-up times, and whether the target holds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from toolwire import ToolRegistry
from toolwire.core.messages import ToolCall
from toolwire.loop.seam import Seam
from toolwire.mcp.hub import HUB
from toolwire.mcp.remote import remote_tools
from toolwire.tools.api import ToolContext
from toolwire.workspace.mcp_servers import McpServer

NODE_BIN = Path(__file__).parents[1] / "tests" / "mcp_servers" / "node_modules" / ".bin"
EVERYTHING = NODE_BIN / "mcp-server-everything"
BATCH = 100  # calls per timed batch
BATCHES = 30  # a shared machine is noisy: the best batch of each side is compared
STARTS = 5


def server(tag: str) -> McpServer:
    """The everything server; ``tag`` makes a launch of its own, so a fresh process."""
    return McpServer(name="everything", command=str(EVERYTHING), env=(("BENCH_TAG", tag),),
                     enabled=True, admin_only=False, data_class="public")  # fmt: skip


def bare_client() -> Client:
    return Client(stdio_client(StdioServerParameters(command=str(EVERYTHING))), cache=None)


async def batch_us(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    for _ in range(BATCH):
        await call()
    return (time.perf_counter() - started) / BATCH * 1e6


async def per_call() -> tuple[float, float]:
    """Best µs per call: (bare client, toolwire's seam)."""
    tools, problems = await asyncio.to_thread(remote_tools, [server("calls")], {})
    assert not problems, problems
    seam = Seam(ToolRegistry(tools))
    offered = frozenset({"everything__echo"})
    context = ToolContext()
    call = ToolCall("c1", "everything__echo", '{"message": "hello"}')

    async def ours() -> object:
        invoked = await seam.invoke(call, offered, context)
        assert invoked.result.content == "Echo: hello", invoked.result.content
        return invoked

    async with bare_client() as client:

        async def bare() -> object:
            return await client.call_tool("echo", {"message": "hello"})

        await bare(), await ours()  # warm both
        bare_best = ours_best = float("inf")
        for _ in range(BATCHES):
            bare_best = min(bare_best, await batch_us(bare))
            ours_best = min(ours_best, await batch_us(ours))
    return bare_best, ours_best


def toolwire_start(tag: str) -> tuple[float, float]:
    """Seconds to the first listing and then the first call, on a fresh server process."""
    started = time.perf_counter()
    tools, _ = remote_tools([server(tag)], {})
    listed = time.perf_counter() - started
    echo = next(t for t in tools if t.spec.name == "everything__echo")
    started = time.perf_counter()
    asyncio.run(echo.execute({"message": "first"}, ToolContext()))
    return listed, time.perf_counter() - started


async def bare_start() -> float:
    started = time.perf_counter()
    async with bare_client() as client:
        await client.list_tools()
        return time.perf_counter() - started


def main() -> None:
    bare, ours = asyncio.run(per_call())
    print(f"per call: bare SDK client {bare:.0f} µs, through toolwire's seam {ours:.0f} µs "
          f"({ours / bare:.2f}x, +{ours - bare:.0f} µs)")  # fmt: skip
    starts = [toolwire_start(f"start{n}") for n in range(STARTS)]
    bare_starts = [asyncio.run(bare_start()) for _ in range(STARTS)]
    listed, first = min(s[0] for s in starts), min(s[1] for s in starts)
    print(f"start-up (best of {STARTS}): bare client start + list {min(bare_starts) * 1e3:.0f} "
          f"ms; toolwire first listing {listed * 1e3:.0f} ms, then first call "
          f"{first * 1e3:.1f} ms")  # fmt: skip
    print(f"at most 0.5 ms added a call: {'holds' if ours - bare <= 500 else 'MISSED'}")
    HUB.close()


if __name__ == "__main__":
    main()
