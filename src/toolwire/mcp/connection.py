"""One session to one MCP server, living on the hub's event loop (see :mod:`toolwire.mcp.hub`).

The session starts on first use (a listing or a call) and is shared by every caller; its
requests may overlap. The SDK's client is an async context manager holding an anyio task group,
which must be entered and left by one task: a runner task opens it, hands the client out, and
keeps it open until told to stop.

Every failure becomes a :class:`McpFailure` whose ``kind`` picks the text the model reads (the
seam writes it); the details go to the log only. A server that stops (its process dies, its
stream closes) is dropped, and the next use starts it again. A server that asks for OAuth (an
``auth`` table) is reached through :mod:`toolwire.mcp.auth`; a refused sign-in is kind
``unauthorized``, and nobody signs in unless the connection was given a ``sign_in``. A stdio
server's stdout is read by :class:`toolwire.mcp.stdio.StdioTransport`, a line at most
``STDOUT_LINE_BYTES``: a longer one ends the session (kind ``oversized``) and stops the server.
A streamable-HTTP server's answers are read by :class:`toolwire.mcp.http_client.BoundedHttp`
within the same limit: a larger answer or event fails its request (kind ``oversized``). A
server's stderr is piped into the log line by line (``toolwire.mcp.stderr``, level INFO), never
into a result; each line is cut at ``STDERR_LINE_BYTES`` and at most ``STDERR_LOGGED_BYTES`` of
one process's stderr are logged (the rest is read and dropped), so a server writing without
end, or without newlines, holds neither memory nor the log. A stdio server starts with the
child environment (:mod:`toolwire.core.children`) plus what its table passes explicitly
(``env``, ``pass_env``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, TextIO, TypeVar

import anyio
import anyio.lowlevel
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, CallToolResult, Implementation, Tool
from pydantic import ValidationError

from toolwire.core.children import bounded_lines, child_environment
from toolwire.core.version import installed_version
from toolwire.mcp.auth import ServerAuth, server_auth
from toolwire.mcp.auth_errors import AuthFailure
from toolwire.mcp.caller import Caller, InFlight
from toolwire.mcp.elicit import ElicitationCallback
from toolwire.mcp.http_client import BodyTooLarge, BoundedHttp
from toolwire.mcp.sampling import SamplingCallback
from toolwire.mcp.sign_in import LoopbackSignIn
from toolwire.mcp.stdio import LineTooLong, StdioTransport
from toolwire.workspace.mcp_servers import Launch

log = logging.getLogger("toolwire.mcp")
stderr_log = logging.getLogger("toolwire.mcp.stderr")

FailureKind = Literal[
    "start", "stopped", "timeout", "garbage", "protocol", "oversized", "unauthorized"
]
MAX_LIST_PAGES = 20  # a server paging forever must not hang a listing
STDERR_LINE_BYTES = 2_000  # one log line; a server can print a gigabyte without a newline
# One server process's stderr in the log: plenty for a crash's traceback and a chatty start;
# a server printing without end must not fill the operator's disk.
STDERR_LOGGED_BYTES = 1_000_000
STDERR_CUT = "(its further stderr is not logged)"
STDERR_TAIL_LINES = 20  # kept for the warning when a server fails to start
STOP_TIMEOUT_S = 10.0  # the SDK closes stdin, waits, then kills: 2 s + 2 s + 2 s at worst
T = TypeVar("T")
_LOST = (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


class McpFailure(Exception):
    """A server could not answer. ``kind`` is what the model is told; ``str()`` is for the log."""

    def __init__(self, kind: FailureKind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


_Opened = tuple[Client, StdioTransport | None, BoundedHttp | None]


@dataclass(slots=True)
class _Live:
    client: Client
    stop: asyncio.Event
    runner: asyncio.Task[None]
    stdio: StdioTransport | None  # None for a server over HTTP
    http: BoundedHttp | None  # None for a stdio server

    def refused(self) -> LineTooLong | BodyTooLarge | None:
        """Why the server's last message over the limit was refused, taken once."""
        if self.stdio is not None:
            return self.stdio.refused
        if self.http is None:
            return None
        refused, self.http.refused = self.http.refused, None
        return refused

    def unauthorized(self) -> AuthFailure | None:
        """Why the server last refused toolwire's sign-in, taken once."""
        return _unauthorized(self.http)


def _unauthorized(http: BoundedHttp | None) -> AuthFailure | None:
    return http.auth.take() if http is not None and isinstance(http.auth, ServerAuth) else None


class Connection:
    """The session to the server of one :class:`Launch`. Use it on the hub's loop only."""

    def __init__(self, launch: Launch, sign_in: LoopbackSignIn | None = None) -> None:
        self.launch = launch
        self.sign_in = sign_in  # None: nobody is there to sign in
        self._live: _Live | None = None
        self._starting = asyncio.Lock()  # binds to the hub's loop on first use
        self._inflight = InFlight()

    async def list_tools(self) -> list[Tool]:
        """Every tool the server lists, page by page."""
        live = await self._session()
        return await self._answer(live, "the listing", _all_tools(live.client))

    async def call(
        self, tool: str, arguments: dict[str, Any], caller: Caller | None = None
    ) -> CallToolResult:
        """One call of ``tool`` (the server's own name for it); ``caller``: whose call it is,
        for what the server asks while it is open (see :mod:`toolwire.mcp.caller`)."""
        live = await self._session()
        request = live.client.call_tool(tool, arguments)
        if caller is None:
            return await self._answer(live, f"the call of {tool!r}", request)
        with self._inflight.calling(caller):
            return await self._answer(live, f"the call of {tool!r}", request, caller)

    async def close(self) -> None:
        """Stop the session, if one is open: the server process is ended."""
        live, self._live = self._live, None
        if live is not None:
            live.stop.set()
            await asyncio.wait({live.runner}, timeout=STOP_TIMEOUT_S)

    async def _answer(
        self, live: _Live, what: str, request: Awaitable[T], caller: Caller | None = None
    ) -> T:
        """``request``'s answer within the server's timeout (extended while a person is
        asked: see ``Caller.extend``); any failure as McpFailure."""
        name = self.launch.name
        try:
            async with asyncio.timeout(self.launch.timeout) as budget:
                if caller is not None:
                    caller.budget = budget
                return await request
        except TimeoutError:
            why = f"{name}: {what} took over {self.launch.timeout:g} s"
            raise McpFailure("timeout", why) from None
        except MCPError as exc:
            refused, unauthorized = live.refused(), live.unauthorized()
            if exc.code == CONNECTION_CLOSED:
                self._ended(live.stop)
            if unauthorized is not None:
                raise McpFailure("unauthorized", f"{unauthorized}, during {what}") from None
            if refused is not None:
                raise McpFailure("oversized", f"{refused}, during {what}") from None
            if exc.code == CONNECTION_CLOSED:
                raise McpFailure("stopped", f"{name}: the server stopped during {what}") from exc
            raise McpFailure("protocol", f"{name}: {what} failed: {exc.message}") from exc
        except ValidationError as exc:
            raise McpFailure("garbage", f"{name}: {what} got an answer that is not MCP") from exc
        except _LOST as exc:
            self._ended(live.stop)
            raise McpFailure("stopped", f"{name}: lost the server during {what}") from exc

    def _ended(self, stop: asyncio.Event) -> None:
        """Forget the session ``stop`` ends (it failed, or its process exited): its runner
        closes it, and the next use starts a new one."""
        if self._live is not None and self._live.stop is stop:
            self._live = None
        stop.set()

    async def _session(self) -> _Live:
        live = self._live
        if live is not None:
            return live
        async with self._starting:
            if self._live is None:
                self._live = await self._start()
            return self._live

    async def _start(self) -> _Live:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[_Opened] = loop.create_future()
        stop = asyncio.Event()
        runner = loop.create_task(self._run(ready, stop), name=f"mcp:{self.launch.name}")
        try:
            async with asyncio.timeout(self.launch.timeout):
                client, stdio, http = await asyncio.shield(ready)
        except BaseException as exc:
            ready.cancel()
            runner.cancel()
            await asyncio.wait({runner}, timeout=STOP_TIMEOUT_S)
            if isinstance(exc, TimeoutError):
                why = f"{self.launch.name}: did not start within {self.launch.timeout:g} s"
                raise McpFailure("start", why) from None
            if isinstance(exc, AuthFailure):
                raise McpFailure("unauthorized", str(exc)) from None
            if isinstance(exc, Exception):
                raise McpFailure("start", f"{self.launch.name}: {describe(exc)}") from None
            raise
        return _Live(client, stop, runner, stdio, http)

    async def _run(self, ready: asyncio.Future[_Opened], stop: asyncio.Event) -> None:
        """Open the session, hand it out through ``ready``, hold it until ``stop``.

        A stdio server's stderr reaching its end means its process exited, and a stdout line
        over the limit means it is to be stopped: the session is dropped then, so the next call
        starts the server again."""
        stderr: StderrLog | None = None
        stdio: StdioTransport | None = None
        http = None
        if self.launch.command is None:
            http = BoundedHttp(self.launch.name, auth=server_auth(self.launch, self.sign_in))
        if self.launch.command is not None:
            loop = asyncio.get_running_loop()
            ended = functools.partial(loop.call_soon_threadsafe, self._ended, stop)
            stderr = StderrLog(self.launch.name, on_end=ended)
            stdio = stdio_transport(self.launch, stderr,
                                    on_refused=functools.partial(self._ended, stop))  # fmt: skip
        try:
            async with open_client(self.launch, stdio, http, self._inflight) as client:
                if stderr is not None:
                    stderr.spawned()
                if not ready.done():
                    ready.set_result((client, stdio, http))
                await stop.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            tail = "" if stderr is None else stderr.tail()
            why = exc if stdio is None or stdio.refused is None else stdio.refused
            why = _unauthorized(http) or why
            if not ready.done():
                log.warning("MCP server %r failed to start: %s%s", self.launch.name,
                            describe(why), tail)  # fmt: skip
                ready.set_exception(why)
            else:
                log.warning("MCP server %r stopped: %s%s", self.launch.name, describe(why), tail)
        finally:
            if stderr is not None:
                stderr.spawned()


async def _all_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def stdio_transport(
    launch: Launch, stderr: StderrLog, on_refused: Callable[[], object]
) -> StdioTransport:
    """The transport to ``launch``'s server process: the child environment plus what its
    table passes, stderr into ``stderr``."""
    assert launch.command is not None
    params = StdioServerParameters(
        command=launch.command,
        args=list(launch.args),
        env=child_environment(launch.env),
        cwd=launch.cwd,
    )
    return StdioTransport(launch.name, params, errlog=stderr.file, on_refused=on_refused)


@asynccontextmanager
async def open_client(
    launch: Launch,
    stdio: StdioTransport | None,
    http: BoundedHttp | None,
    inflight: InFlight | None = None,
) -> AsyncIterator[Client]:
    """The SDK's client for ``launch``, entered: over ``stdio`` (a stdio server's) or
    streamable HTTP through the bounded client ``http``. It answers a server's questions
    (:mod:`toolwire.mcp.elicit`), and declares sampling only when the server's table allows
    it (:mod:`toolwire.mcp.sampling`), for the calls ``inflight`` holds."""
    inflight = inflight if inflight is not None else InFlight()
    async with AsyncExitStack() as stack:
        transport: Any
        if stdio is not None:
            transport = stdio.streams()
        else:
            assert launch.url is not None and http is not None
            web = await stack.enter_async_context(http.client(dict(launch.headers)))
            transport = streamable_http_client(
                launch.url, http_client=web, max_sse_event_size=http.max_bytes
            )
        client = Client(
            transport,
            cache=None,
            client_info=Implementation(name="toolwire", version=installed_version()),
            message_handler=_Messages(launch.name),
            logging_callback=_ServerLog(launch.name),
            elicitation_callback=ElicitationCallback(launch, inflight),
            sampling_callback=SamplingCallback(launch, inflight) if launch.sampling else None,
        )
        yield await stack.enter_async_context(client)


class _Messages:
    """What the session could not read from the server goes to the log."""

    def __init__(self, server: str) -> None:
        self.server = server

    async def __call__(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.warning("MCP server %r sent something unreadable: %s", self.server,
                        describe(message))  # fmt: skip
        await anyio.lowlevel.checkpoint()


class _ServerLog:
    """A server's own log notifications, into the operator's log."""

    def __init__(self, server: str) -> None:
        self.server = server

    async def __call__(self, params: Any) -> None:
        stderr_log.info("%s (%s): %s", self.server, params.level, str(params.data)[:2000])


class StderrLog:
    """A server's stderr, line by line, into the log: a pipe, read by a daemon thread, which
    calls ``on_end`` when the pipe ends (the server exited)."""

    def __init__(self, server: str, on_end: Callable[[], object] = lambda: None) -> None:
        read_end, write_end = os.pipe()
        self.server = server
        self.on_end = on_end
        self.file: TextIO = os.fdopen(write_end, "w")
        self._tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        threading.Thread(
            target=self._pump, args=(read_end,), name=f"mcp-stderr-{server}", daemon=True
        ).start()

    def spawned(self) -> None:
        """Close this process's copy of the pipe (the server holds its own): the reader then
        ends when the server does. Safe to call twice."""
        self.file.close()

    def tail(self) -> str:
        """The last lines the server printed, for a warning in the log."""
        lines = list(self._tail)
        return "" if not lines else "; its last stderr lines: " + " | ".join(lines)

    def _pump(self, fd: int) -> None:
        logged = 0
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            for raw in bounded_lines(pipe.read, STDERR_LINE_BYTES):
                if logged > STDERR_LOGGED_BYTES:
                    continue  # read on, so the server never blocks on a full pipe
                line = raw.decode("utf-8", "replace").rstrip()
                logged += len(raw) + 1
                if logged > STDERR_LOGGED_BYTES:
                    line = STDERR_CUT
                self._tail.append(line)
                stderr_log.info("%s: %s", self.server, line)
        with contextlib.suppress(RuntimeError):  # the hub's loop is gone: the process is ending
            self.on_end()


def describe(exc: BaseException) -> str:
    """An exception for the log: the leaves of an exception group, each as ``Type: message``."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in exc.exceptions)
    text = str(exc)
    return type(exc).__name__ + (f": {text[:500]}" if text else "")
