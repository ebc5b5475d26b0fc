"""The README's ``toolwire mcp`` commands, run as a host meets them: over stdio through the SDK's
client, or over HTTP with and without the token the command prints."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import httpx
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .mcp_serve.kit import ACCEPT, INITIALIZE, announced
from .served import interrupt

START_TIMEOUT_S = 120  # the server may be chained after creating a virtual environment


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
        served = announced(process, START_TIMEOUT_S)
        assert served.token, served.stderr
        bare = httpx.post(served.url, json=INITIALIZE, headers=ACCEPT, timeout=10)
        assert bare.status_code == 401, bare.text
        headers = {**ACCEPT, "Authorization": f"Bearer {served.token}"}
        opened = httpx.post(served.url, json=INITIALIZE, headers=headers, timeout=10)
        assert opened.status_code == 200 and '"serverInfo"' in opened.text, opened.text
    finally:
        interrupt(process, group=True)
