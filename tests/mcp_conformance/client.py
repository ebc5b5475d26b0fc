"""toolwire's MCP client under the official conformance suite's client scenarios.

The suite starts a server for a scenario and runs this file with the server's URL as its last
argument, the scenario's name in ``MCP_CONFORMANCE_SCENARIO`` and, for some, credentials in
``MCP_CONFORMANCE_CONTEXT`` (JSON). Everything here goes through toolwire's own code: a
workspace file declares the server (its ``auth`` table as a user would write it, a secret by
the name of an environment variable), the workspace loader checks it, and a
:class:`toolwire.mcp.connection.Connection` lists and calls the server's tools, signing in with
:class:`toolwire.mcp.sign_in.LoopbackSignIn`. The person who would open the authorization URL
is a headless browser: it fetches the URL, and follows the authorization server's redirect to
toolwire's loopback callback, as a browser would.

``HANDLERS`` maps a scenario to what its workspace's auth table says and what is called; a new
scenario is one line there. Exit status 0 when every step answered, 1 (one ``error:`` line on
stderr) when one failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from toolwire.mcp.connection import Connection, McpFailure
from toolwire.mcp.sign_in import LoopbackSignIn
from toolwire.workspace.config import load_workspace

SERVER = "conformance"
SECRET_VARIABLE = "CONFORMANCE_CLIENT_SECRET"
KEY_VARIABLE = "CONFORMANCE_PRIVATE_KEY"
# The suite's client ID metadata document: a URL it knows, used when the server takes one.
CIMD_URL = "https://conformance-test.local/client-metadata.json"

AuthTable = Callable[[Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Handler:
    """A scenario's auth table (from its context) and the calls made once connected."""

    auth: AuthTable | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    environ: Callable[[Mapping[str, Any]], dict[str, str]] = field(default=lambda _: {})


def _person(context: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": "oauth", "client_metadata_url": CIMD_URL}


def _pre_registered(context: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": "oauth", "client_id": context["client_id"],
            "client_secret_env": SECRET_VARIABLE}  # fmt: skip


def _client_secret(context: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": "client_credentials", "client_id": context["client_id"],
            "client_secret_env": SECRET_VARIABLE}  # fmt: skip


def _private_key(context: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": "client_credentials", "client_id": context["client_id"],
            "private_key_env": KEY_VARIABLE,
            "jwt_algorithm": context.get("signing_algorithm") or "ES256"}  # fmt: skip


def _secrets(context: Mapping[str, Any]) -> dict[str, str]:
    found = {
        SECRET_VARIABLE: context.get("client_secret"),
        KEY_VARIABLE: context.get("private_key_pem"),
    }
    return {name: value for name, value in found.items() if isinstance(value, str)}


_TOOL: tuple[tuple[str, dict[str, Any]], ...] = (("test-tool", {}),)
_SIGNED_IN = Handler(auth=_person, calls=_TOOL)
HANDLERS: dict[str, Handler] = {
    "initialize": Handler(),
    "tools_call": Handler(calls=(("add_numbers", {"a": 5, "b": 3}),)),
    "sse-retry": Handler(calls=(("test_reconnection", {}),)),
    **dict.fromkeys((
        "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2",
        "auth/metadata-var3", "auth/basic-cimd", "auth/scope-from-www-authenticate",
        "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
        "auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
        "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
    ), _SIGNED_IN),
    "auth/pre-registration": Handler(auth=_pre_registered, environ=_secrets),
    "auth/client-credentials-basic": Handler(auth=_client_secret, environ=_secrets),
    "auth/client-credentials-jwt": Handler(auth=_private_key, environ=_secrets),
}  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def toml_value(value: object) -> str:
    return json.dumps(value)  # a JSON string or number is a TOML one


def workspace_text(url: str, folder: Path, auth: Mapping[str, Any] | None) -> str:
    """The workspace a user would write for the scenario's server."""
    lines = [f"data_dir = {toml_value(str(folder))}", "", f"[mcp_servers.{SERVER}]",
             f"url = {toml_value(url)}", "timeout = 20"]  # fmt: skip
    if auth is not None:
        lines += ["", f"[mcp_servers.{SERVER}.auth]"]
        lines += [f"{key} = {toml_value(value)}" for key, value in auth.items()]
    return "\n".join(lines) + "\n"


async def browse(url: str) -> None:
    """Be the person who signs in: open the URL and follow where the server sends us."""
    async with httpx.AsyncClient(timeout=20) as web:
        answer = await web.get(url)
        location = answer.headers.get("location")
        if location is None:
            raise RuntimeError(f"the authorization endpoint answered {answer.status_code}, "
                               "not a redirect")  # fmt: skip
        await web.get(location)


async def run(scenario: str, url: str, context: Mapping[str, Any], folder: Path) -> None:
    handler = HANDLERS[scenario]
    auth = None if handler.auth is None else handler.auth(context)
    if auth is not None and auth["kind"] == "oauth":
        auth = {**auth, "redirect_port": free_port()}
    path = folder / "workspace.toml"
    path.write_text(workspace_text(url, folder, auth))
    (server,) = load_workspace(path).mcp_servers
    launch = server.launch({**os.environ, **handler.environ(context)})
    port = auth["redirect_port"] if auth is not None and "redirect_port" in auth else 0
    connection = Connection(launch, sign_in=LoopbackSignIn(SERVER, port, show=browse))
    try:
        tools = await connection.list_tools()
        print(f"tools: {', '.join(tool.name for tool in tools)}")
        for name, arguments in handler.calls:
            result = await connection.call(name, arguments)
            print(f"{name}: {'error' if result.is_error else 'ok'}")
    finally:
        await connection.close()


def main(argv: list[str]) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if scenario not in HANDLERS or len(argv) < 2:
        print(f"error: no handler for scenario {scenario!r} (known: {', '.join(HANDLERS)})",
              file=sys.stderr)  # fmt: skip
        return 1
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="toolwire-conformance-") as folder:
        try:
            asyncio.run(run(scenario, argv[-1], context, Path(folder)))
        except McpFailure as failure:
            print(f"error: {failure.kind}: {failure}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
