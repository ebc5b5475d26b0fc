"""``toolwire mcp-login NAME``: sign in to a workspace's MCP server once, for the runs after.

A run never signs anybody in: a server whose ``auth`` table asks for a person's sign-in
(``kind = "oauth"``) and holds no usable token fails its listing with a line naming this
command. Here a person is at the terminal: the command connects to the server, and when the
server asks for a sign-in it prints the authorization URL on stderr, waits (``--timeout``) for
the browser to come back to ``http://127.0.0.1:<redirect_port>/callback``, and keeps the tokens
where runs find them (a private file under the data directory, see :mod:`toolwire.mcp.auth`).
A server with tokens that still work is signed in already, and nothing is asked. The tokens
are never printed; stdout gets one line saying the server answered.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.run import open_workspace
from toolwire.cli.show import error, safe
from toolwire.cli.store import notices
from toolwire.core.errors import ConfigError, ToolwireError

if TYPE_CHECKING:
    from toolwire.workspace.mcp_servers import McpServer

DEFAULT_SIGN_IN_SECONDS = 300
MAX_SIGN_IN_SECONDS = 3600


@app.command("mcp-login")
def mcp_login(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The MCP server's name: the "
                                        "NAME of its mcp_servers.NAME table.")],
    *,
    workspace: Annotated[
        Path,
        typer.Option("--workspace", help="The workspace TOML file listing the server, or a "
                     "folder holding workspace.toml."),
    ],
    timeout: Annotated[
        float,
        typer.Option("--timeout", min=1, max=MAX_SIGN_IN_SECONDS, metavar="SECONDS",
                     help="How long to wait for the browser to come back."),
    ] = DEFAULT_SIGN_IN_SECONDS,
) -> None:  # fmt: skip
    """Sign in to a workspace's MCP server (OAuth) and keep its tokens for later runs."""
    console = notices()
    try:
        server, environ = _server(workspace, name)
        count, kept = _sign_in(server, environ, timeout)
    except (ToolwireError, _Failed) as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None
    typer.echo(f"signed in to {name}: it lists {count} tools; the tokens are kept in {kept}")


class _Failed(Exception):
    """The server could not be reached or refused the sign-in; the message says why."""


def _server(path: Path, name: str) -> tuple[McpServer, dict[str, str]]:
    import os

    found = open_workspace(path)
    assert found is not None
    server = next((s for s in found.mcp_servers if s.name == name), None)
    if server is None:
        names = ", ".join(s.name for s in found.mcp_servers) or "none"
        raise ConfigError(f"{path}: no MCP server is named {safe(name, 40)!r} (it has: {names})")
    if server.auth is None:
        raise ConfigError(f"{path}: mcp_servers.{name} has no auth table: it needs no sign-in")
    return server, dict(found.environ if found.environ is not None else os.environ)


def _sign_in(server: McpServer, environ: dict[str, str], seconds: float) -> tuple[int, Path]:
    import asyncio
    import dataclasses

    from toolwire.mcp.auth import token_path
    from toolwire.mcp.connection import Connection, McpFailure
    from toolwire.mcp.sign_in import LoopbackSignIn

    assert server.auth is not None
    # The sign-in may take the person minutes: the start may take that long, and a little more.
    launch = dataclasses.replace(server.launch(environ), timeout=seconds + server.timeout)
    sign_in = LoopbackSignIn(server.name, server.auth.redirect_port, _show, seconds)

    async def connect() -> int:
        connection = Connection(launch, sign_in=sign_in)
        try:
            return len(await connection.list_tools())
        finally:
            await connection.close()

    try:
        return asyncio.run(connect()), token_path(launch)
    except McpFailure as failure:
        raise _Failed(str(failure)) from None


async def _show(url: str) -> None:
    notices().print(Text("Open this address in a browser to sign in (toolwire waits for the "
                         f"answer):\n{url}"), soft_wrap=True)  # fmt: skip
