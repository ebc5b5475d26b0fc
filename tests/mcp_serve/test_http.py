"""``toolwire mcp --http``: streamable HTTP on loopback behind a bearer token, against the
official SDK's client and raw HTTP."""

from __future__ import annotations

import contextlib
import json
import signal

import anyio
import httpx
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from toolwire.mcp.serve_http import MISSING, WRONG

from .kit import ACCEPT, CANARY, INITIALIZE, Host, tool_call, waiting_run

ENV_TOKEN = "an-operator-chosen-token-0123456789"


async def listed_and_called(url: str, token: str) -> tuple[list[str], types.CallToolResult]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = [t.name for t in (await session.list_tools()).tools]
        return tools, await session.call_tool("leak", {"word": "over http"})


def test_the_sdk_client_with_the_printed_token_lists_and_calls(host: Host) -> None:
    with host.http() as served:
        assert served.url.startswith("http://127.0.0.1:") and served.token is not None
        tools, result = anyio.run(listed_and_called, served.url, served.token)
    assert "read_records" in tools and "list_tables" not in tools
    assert result.content == [types.TextContent(type="text", text="said over http")]
    assert result.structured_content is None and result.is_error is False


def test_a_request_without_the_token_or_with_another_is_a_clear_401(host: Host) -> None:
    with host.http() as served:
        assert served.token is not None

        def post(authorization: str | None) -> httpx.Response:
            extra = {} if authorization is None else {"Authorization": authorization}
            return httpx.post(served.url, json=INITIALIZE, headers={**ACCEPT, **extra},
                              timeout=10)  # fmt: skip

        bare, wrong = post(None), post("Bearer " + "x" * 43)
        basic, right = post(f"Basic {served.token}"), post(f"Bearer {served.token}")
    for refused, why in ((bare, MISSING), (wrong, WRONG), (basic, MISSING)):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"'
        assert refused.json() == {"error": "invalid_token", "error_description": why}
    assert right.status_code == 200 and "mcp-session-id" in right.headers


def test_the_raw_http_answer_holds_no_artifact(host: Host) -> None:
    with host.http("--privacy", "full") as served:
        headers = {**ACCEPT, "Authorization": f"Bearer {served.token}"}
        with httpx.Client(headers=headers, timeout=30) as client:
            opened = client.post(served.url, json=INITIALIZE)
            headers = {"mcp-session-id": opened.headers["mcp-session-id"],
                       "mcp-protocol-version": "2025-11-25"}  # fmt: skip
            client.post(served.url, headers=headers,
                        json={"jsonrpc": "2.0", "method": "notifications/initialized"})  # fmt: skip
            answered = client.post(served.url, headers=headers,
                                   json={"jsonrpc": "2.0", "id": 2,
                                         **tool_call("leak", {"word": "raw"})})  # fmt: skip
    raw = answered.content.decode()
    assert answered.status_code == 200 and '"text":"said raw"' in raw
    assert CANARY not in raw and "structuredContent" not in raw and "canary" not in raw
    with host.store() as store:
        (run,) = store.list_runs()
        stored = store.get_run(run.id)
    assert stored is not None and CANARY in json.dumps(stored.steps)  # kept, not sent


def test_a_token_from_the_environment_is_used_and_never_printed(host: Host) -> None:
    with host.http(env={"TOOLWIRE_MCP_TOKEN": ENV_TOKEN}) as served:
        assert served.token is None and ENV_TOKEN not in served.stderr
        assert "TOOLWIRE_MCP_TOKEN" in served.stderr
        tools, _ = anyio.run(listed_and_called, served.url, ENV_TOKEN)
    assert "leak" in tools


def test_a_short_token_in_the_environment_is_refused_at_start(host: Host) -> None:
    host.env["TOOLWIRE_MCP_TOKEN"] = "short"
    done = host.run("--http", "--port", "1")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == "error: $TOOLWIRE_MCP_TOKEN must be at least 16 characters long"


def test_a_non_loopback_host_needs_allow_remote(host: Host) -> None:
    done = host.run("--http", "--host", "0.0.0.0")
    assert done.returncode == 2
    assert "0.0.0.0 is not a loopback address; pass --allow-remote" in done.stderr


def test_the_endpoint_refuses_a_foreign_host_name(host: Host) -> None:
    with host.http() as served:
        refused = httpx.post(served.url, json=INITIALIZE, timeout=10, headers={
            **ACCEPT, "Authorization": f"Bearer {served.token}", "Host": "evil.example",
        })  # fmt: skip
    assert refused.status_code == 421


def test_a_server_stopped_by_a_signal_cancels_its_waiting_call_first(host: Host) -> None:
    with host.http() as served:

        async def scenario() -> str:
            headers = {"Authorization": f"Bearer {served.token}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as client,
                streamable_http_client(served.url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
                anyio.create_task_group() as group,
            ):
                await session.initialize()

                async def call() -> None:
                    with contextlib.suppress(MCPError):  # the server goes away mid-call
                        await session.call_tool("write_file", {"path": "gone.md", "text": "x"})

                group.start_soon(call)
                with host.store() as store:
                    run_id = await waiting_run(store)
                served.process.send_signal(signal.SIGTERM)
                await anyio.to_thread.run_sync(served.process.wait)
                group.cancel_scope.cancel()
            return run_id

        run_id = anyio.run(scenario)
    with host.store() as store:
        run = store.get_run(run_id)
    assert run is not None and run.status == "cancelled"
    assert not (host.demo / "files" / "gone.md").exists()
