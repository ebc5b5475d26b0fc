"""The one place MCP sessions live: a background thread running an event loop of its own.

Why a thread of its own: an MCP session is bound to the event loop, and the anyio task group,
that opened it. ``ToolLoop.run_sync`` runs every run in a fresh ``asyncio.run`` whose loop is
closed when the run ends, while the inspector keeps one loop for its lifetime. A session opened
on a run's loop would die with that run; one opened on the inspector's would be unusable from a
command-line run. A loop that belongs to no run serves both: sessions start lazily on it, are
shared by every run of the process (one session per server launch, safe under concurrent
calls), and are closed once, when the process exits.

A call crosses over with ``run_coroutine_threadsafe`` and is awaited with ``wrap_future``: the
calling loop never blocks, and cancelling the calling task cancels the call on the hub. The
price is one thread hop each way per call (see ``bench/mcp.py``).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from mcp.types import CallToolResult, Tool

from toolwire.mcp.caller import Caller
from toolwire.mcp.connection import STOP_TIMEOUT_S, Connection
from toolwire.workspace.mcp_servers import Launch

log = logging.getLogger("toolwire.mcp")
T = TypeVar("T")


class Hub:
    """Every MCP session of the process, on one event loop in a daemon thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connections: dict[Launch, Connection] = {}

    async def call(
        self, launch: Launch, tool: str, arguments: dict[str, Any], caller: Caller | None = None
    ) -> CallToolResult:
        """Call ``tool`` on the server of ``launch``, from any event loop; ``caller``: whose
        call it is (what the server asks during it is answered for that call)."""
        called = self.connection(launch).call(tool, arguments, caller)
        return await asyncio.wrap_future(self.submit(called))

    async def list_tools(self, launch: Launch) -> list[Tool]:
        return await asyncio.wrap_future(self.submit(self.connection(launch).list_tools()))

    def list_all(self, launches: Sequence[Launch]) -> list[list[Tool] | BaseException]:
        """List several servers at once (they start in parallel), from synchronous code.

        Each entry is the server's tools, or why it could not list them."""

        async def each() -> list[list[Tool] | BaseException]:
            listings = (self.connection(launch).list_tools() for launch in launches)
            return await asyncio.gather(*listings, return_exceptions=True)

        return self.submit(each()).result()

    def connection(self, launch: Launch) -> Connection:
        with self._lock:
            found = self._connections.get(launch)
            if found is None:
                found = self._connections[launch] = Connection(launch)
            return found

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coroutine`` on the hub's loop; the hub starts on first use."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._running_loop())

    def close(self, launches: Sequence[Launch] | None = None) -> None:
        """Stop the sessions of ``launches`` (default: all). Their servers are ended."""
        with self._lock:
            loop = self._loop
            chosen = list(self._connections) if launches is None else list(launches)
            closing = [self._connections.pop(k) for k in chosen if k in self._connections]
        if loop is None or not closing:
            return

        async def stop_all() -> None:
            await asyncio.gather(*(c.close() for c in closing), return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(stop_all(), loop).result(STOP_TIMEOUT_S + 5)
        except (concurrent.futures.TimeoutError, RuntimeError):
            log.warning("MCP servers did not all stop in time")

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="toolwire-mcp", daemon=True).start()
                self._loop = loop
                atexit.register(self.close)
            return self._loop


HUB = Hub()
