"""A stdio MCP server's transport: the server as a child process, newline-delimited JSON-RPC
over its stdin and stdout, each stdout line read within a bound.

The SDK's ``stdio_client`` joins stdout chunks into one string until a newline comes, however
long that takes: a server writing a gigabyte without a newline makes the client hold a
gigabyte. :class:`StdioTransport` gives the SDK's session the same pair of streams and keeps
the SDK's behaviours (each line parsed as one JSON-RPC message; a line that is not one handed
to the session as an exception; one line at a time, no read-ahead while a delivery waits; the
spec's shutdown: close stdin, wait, then stop the whole process tree, shielded from
cancellation and bounded in time), but it holds at most one read chunk and one line.

Invariants:
- A line over ``max_line_bytes`` (``STDOUT_LINE_BYTES`` unless told) is refused, not cut: a
  cut JSON-RPC message is no message. The refusal is logged (the server, the limit), kept in
  ``refused`` for whoever asks why the session ended, and reported through ``on_refused``; the
  session's stream ends, so every pending request fails as the connection closing. The rest of
  the server's stdout is read and dropped until it is stopped, so it never blocks on a full
  pipe.
- The server starts with exactly the environment it is given (the caller builds it with
  :func:`toolwire.core.children.child_environment`): nothing is merged in here.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import ByteReceiveStream, ObjectReceiveStream, ObjectSendStream
from mcp import StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.os.win32.utilities import (
    ServerProcess,
    close_process_job,
    create_windows_process,
    get_windows_executable_command,
    terminate_windows_process_tree,
)
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter

from toolwire.core.children import READ_CHUNK_BYTES

log = logging.getLogger("toolwire.mcp")

# One JSON-RPC message from a server. The largest a real server sends is a tool result with a
# screenshot or a file in it: a full-page PNG is a few MB, 4/3 of that as base64. 8 MiB holds
# that; what toolwire keeps of any result is far smaller (``toolwire.core.bounding``), so a
# longer line is a server gone wrong, and holding it would let it take the client's memory.
STDOUT_LINE_BYTES = 8 * 2**20
EXIT_GRACE_S = 2.0  # stdin closed: the server's time to exit by itself (the SDK's, the spec's)
TERMINATE_GRACE_S = 2.0  # after SIGTERM to its process group, before SIGKILL
REAP_S = 2.0  # for the event loop to see a killed process go; only an unkillable one waits
FLUSH_S = 0.5  # for messages already accepted to reach the server before its stdin closes
POLL_S = 0.01  # how often the exit of the server is looked for
_GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)

Received = SessionMessage | Exception


class LineTooLong(Exception):
    """A server wrote a stdout line over the limit; the message names both."""

    def __init__(self, server: str, limit: int) -> None:
        super().__init__(f"{server}: {refusal(limit)}")
        self.server = server
        self.limit = limit


def refusal(limit: int) -> str:
    return (
        f"wrote a stdout line over {limit} bytes (the limit of one message); the connection "
        "is closed and the server stopped"
    )


class StdioTransport:
    """The transport to one stdio server process; :meth:`streams` opens it (one use)."""

    def __init__(
        self,
        server: str,
        params: StdioServerParameters,
        *,
        errlog: TextIO,
        on_refused: Callable[[], object] = lambda: None,
        max_line_bytes: int = STDOUT_LINE_BYTES,
    ) -> None:
        self.server = server
        self.params = params
        self.errlog = errlog
        self.on_refused = on_refused
        self.max_line_bytes = max_line_bytes
        self.refused: LineTooLong | None = None

    @asynccontextmanager
    async def streams(self) -> AsyncIterator[TransportStreams]:
        """Start the server; the session's read and write streams while it runs."""
        process = await _spawn(self.params, self.errlog)
        # No await between the spawn and the task group, or a cancellation could leak the process.
        to_session, from_server = anyio.create_memory_object_stream[Received](0)
        to_server, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
        written = anyio.Event()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._read, process, to_session)
            tasks.start_soon(_write, process, outgoing, to_session, written)
            try:
                yield from_server, to_server
            finally:
                with anyio.CancelScope(shield=True):
                    from_server.close()  # the reader drains: a server stuck writing can exit
                    to_server.close()
                    with anyio.move_on_after(FLUSH_S):
                        await written.wait()
                    await _stop(process)
                    for stream in (from_server, to_server, to_session, outgoing):
                        await stream.aclose()
                    await anyio.lowlevel.checkpoint()
                tasks.cancel_scope.cancel()  # a survivor holding the pipe open cannot stall us

    async def _read(self, process: ServerProcess, to_session: ObjectSendStream[Received]) -> None:
        stdout = process.stdout
        assert stdout is not None, "the server is spawned with pipes"
        try:
            async with to_session:
                await self._deliver(stdout, to_session)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the session is gone: only the drain below is left
        except LineTooLong as exc:
            log.warning("MCP server %r %s", self.server, refusal(exc.limit))
            self.on_refused()
        finally:
            await _drain(stdout)

    async def _deliver(
        self, stdout: ByteReceiveStream, to_session: ObjectSendStream[Received]
    ) -> None:
        """Every line of ``stdout``, parsed, into the session, one at a time."""
        line = bytearray()
        while True:
            try:
                chunk: bytes = await stdout.receive(READ_CHUNK_BYTES)
            except _GONE:
                return
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                self._grow(line, chunk, start, end)
                await to_session.send(parse_line(line))
                line.clear()
                start = end + 1
            self._grow(line, chunk, start, len(chunk))

    def _grow(self, line: bytearray, chunk: bytes, start: int, stop: int) -> None:
        if len(line) + stop - start > self.max_line_bytes:
            # Kept before the session's stream ends: a request failing then asks why.
            self.refused = LineTooLong(self.server, self.max_line_bytes)
            raise self.refused
        line += chunk[start:stop]


def parse_line(line: bytes | bytearray) -> Received:
    """One stdout line as a message, or what is wrong with it (the session surfaces it)."""
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # pydantic's ValidationError is one; bad UTF-8 is one too
        return exc


async def _write(
    process: ServerProcess,
    outgoing: ObjectReceiveStream[SessionMessage],
    to_session: ObjectSendStream[Received],
    written: anyio.Event,
) -> None:
    stdin = process.stdin
    assert stdin is not None, "the server is spawned with pipes"
    try:
        async with outgoing:
            async for message in outgoing:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stdin.send((data + "\n").encode())
    except _GONE:
        # The server may still run: end the session's stream, so no request waits for ever.
        await to_session.aclose()
    finally:
        written.set()


async def _spawn(params: StdioServerParameters, errlog: TextIO) -> ServerProcess:
    """The server in a kill scope of its own: a new session (process group) on POSIX, a Job
    Object on Windows."""
    env = dict(params.env or {})
    if sys.platform == "win32":  # pragma: no cover - the SDK's Windows path
        command = await anyio.to_thread.run_sync(
            get_windows_executable_command, params.command, abandon_on_cancel=True
        )
        return await create_windows_process(command, params.args, env, errlog, params.cwd)
    return await anyio.open_process([params.command, *params.args], env=env, stderr=errlog,
                                    cwd=params.cwd, start_new_session=True)  # fmt: skip


async def _drain(stdout: Any) -> None:
    """Read and drop what the server still writes, until its stdout closes: a server blocked
    on a full pipe could not read its closed stdin and exit."""
    with anyio.CancelScope(shield=True), suppress(*_GONE, ConnectionError):
        while True:
            await stdout.receive(READ_CHUNK_BYTES)


async def _stop(process: ServerProcess) -> None:
    """Close stdin, give the server its grace, then stop its whole process tree (the
    lifecycle's shutdown: https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle#shutdown)."""
    assert process.stdin is not None and process.stdout is not None
    await _close(process.stdin)
    if not await _exited(process, EXIT_GRACE_S):
        if sys.platform == "win32":  # pragma: no cover
            await terminate_windows_process_tree(process)
        else:
            assert isinstance(process, anyio.abc.Process)
            await terminate_posix_process_tree(process, TERMINATE_GRACE_S)
        if not await _exited(process, REAP_S):
            log.warning("MCP server process %d is still alive after being killed", process.pid)
    close_process_job(process)
    await _close(process.stdout)  # a survivor may hold stdout open: the drain ends anyway
    _close_transport(process)


async def _close(stream: Any) -> None:
    with suppress(*_GONE):
        await stream.aclose()


async def _exited(process: ServerProcess, seconds: float) -> bool:
    """Whether the server exited within ``seconds``. Not ``process.wait()``: on asyncio it also
    waits for the pipes to close, which a grandchild holding them never lets happen."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:  # noqa: ASYNC110 - nothing signals an exit but this
            await anyio.sleep(POLL_S)
        return True
    return False


def _close_transport(process: ServerProcess) -> None:
    """Close asyncio's subprocess transport now: a grandchild holding a pipe end would keep it
    open, and it warns when collected. Nothing public reaches it."""
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with suppress(PermissionError):  # re-killing a setuid child
            close()
