"""The README's ``toolwire mcp`` commands, run as a host meets them: over stdio through the SDK's
client, or over HTTP with and without the token the command prints."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import anyio
import httpx
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .served import interrupt

START_TIMEOUT_S = 120
_SERVING = re.compile(r"serving (http://\S+/mcp)")
_TOKEN = re.compile(r"Bearer <token>\): (\S+)")
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "readme", "version": "1"},
    },
}
_ACCEPT = {"Accept": "application/json, text/event-stream"}


def check_stdio(command: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """Start ``command`` as a host would; list its tools and call one. The tools' names."""

    async def scenario() -> list[str]:
        params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=cwd)
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            called = await session.call_tool("count_records", {"table": "customers"})
            assert called.is_error is False, called
            return names

    names = anyio.run(scenario)
    assert "read_records" in names, names
    return names


def check_http(command: str, env: dict[str, str], cwd: Path) -> None:
    """Start ``command`` (bash), find its endpoint and token; it refuses a request without the
    token and answers one with it; stop it with Ctrl-C."""
    process = subprocess.Popen(
        ["bash", "-c", command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        url, token = _announced(process)
        bare = httpx.post(url, json=_INITIALIZE, headers=_ACCEPT, timeout=10)
        assert bare.status_code == 401, bare.text
        headers = {**_ACCEPT, "Authorization": f"Bearer {token}"}
        opened = httpx.post(url, json=_INITIALIZE, headers=headers, timeout=10)
        assert opened.status_code == 200 and '"serverInfo"' in opened.text, opened.text
    finally:
        interrupt(process, group=True)


def _announced(process: subprocess.Popen[str]) -> tuple[str, str]:
    assert process.stderr is not None
    printed, deadline = "", time.monotonic() + START_TIMEOUT_S
    while not _TOKEN.search(printed) and time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        printed += line
    url, token = _SERVING.search(printed), _TOKEN.search(printed)
    assert url and token, printed
    return url.group(1), token.group(1)
