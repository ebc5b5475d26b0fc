"""What a connected host hears without asking: ``tools/list_changed`` when an operator switches
a tool or a group (in the store, where the inspector's Tools page writes), and log messages at
the level it set, carrying only what the server's privacy level allows."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from toolwire.policy.privacy import tool_name

from .kit import WAIT_SECONDS, Host, handshake_and, raw_exchange

READ_CUSTOMERS = {"table": "customers", "limit": 3}


class Heard:
    """The notifications a client session received, and a way to wait for the next ones."""

    def __init__(self) -> None:
        self.changes = 0
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self._news = anyio.Event()

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.changes += 1
            self._news.set()

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self._news.set()

    async def until(self, *, changes: int = 0, logs: int = 0) -> None:
        with anyio.fail_after(WAIT_SECONDS):
            while self.changes < changes or len(self.logs) < logs:
                self._news = anyio.Event()
                await self._news.wait()


async def switch(host: Host, *, tool: str | None = None, group: str | None = None,
                 on: bool) -> None:  # fmt: skip
    """What the inspector's Tools page does: a tool's or a group's state, in the store."""

    def write() -> None:
        with host.store() as store:
            if tool is not None:
                store.set_tool_state(tool, on)
            if group is not None:
                store.set_group_state(group, on)

    await asyncio.to_thread(write)


async def set_level(session: ClientSession, level: types.LoggingLevel) -> None:
    """``logging/setLevel``, sent as hosts on the handshake versions send it (the SDK's own
    method warns that the 2026-07-28 protocol drops logging)."""
    request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=level))
    await session.send_request(request, types.EmptyResult)


async def names(session: ClientSession) -> list[str]:
    return [t.name for t in (await session.list_tools()).tools]


def test_the_server_declares_list_changed_and_logging(host: Host) -> None:
    (line,) = raw_exchange(host, handshake_and()).splitlines()
    capabilities = json.loads(line)["result"]["capabilities"]
    assert capabilities["tools"] == {"listChanged": True}
    assert capabilities["logging"] == {}


def test_a_host_hears_of_a_switched_tool_and_group_and_lists_the_change(host: Host) -> None:
    async def scenario() -> None:
        heard = Heard()
        async with host.session(message_handler=heard.message) as session:
            assert "read_records" in await names(session)
            await switch(host, tool="read_records", on=False)
            await heard.until(changes=1)
            listed = await names(session)
            assert "read_records" not in listed and "count_records" in listed
            await switch(host, group="documents", on=False)
            await heard.until(changes=2)
            listed = await names(session)
            assert "search_documents" not in listed and "fetch_document" not in listed
            await switch(host, tool="read_records", on=True)
            await heard.until(changes=3)
            assert "read_records" in await names(session)
            with pytest.raises(MCPError, match='"fetch_document" is not offered') as refused:
                await session.call_tool("fetch_document", {"path": "x.md"})
            assert refused.value.code == types.INVALID_PARAMS

    anyio.run(scenario)


def test_a_host_over_http_hears_of_a_switched_tool(host: Host) -> None:
    async def scenario(url: str, token: str) -> list[str]:
        heard = Heard()
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write, message_handler=heard.message) as session,
        ):
            await session.initialize()
            assert "write_file" in await names(session)
            await switch(host, tool="write_file", on=False)
            await heard.until(changes=1)
            return await names(session)

    with host.http() as served:
        assert served.token is not None
        listed = anyio.run(scenario, served.url, served.token)
    assert "write_file" not in listed and "read_records" in listed


def logs_of(host: Host, *args: str) -> list[types.LoggingMessageNotificationParams]:
    """What a host that sets ``info``, then ``warning``, hears of five calls."""

    async def scenario() -> list[types.LoggingMessageNotificationParams]:
        heard = Heard()
        async with host.session(*args, logging_callback=heard.log) as session:
            await session.call_tool("count_records", {"table": "customers"})  # before any level
            await set_level(session, "info")
            await session.call_tool("read_records", READ_CUSTOMERS)
            for refused in ("no_such_tool", "list_tables"):
                with pytest.raises(MCPError):
                    await session.call_tool(refused, {})
            await set_level(session, "warning")
            await session.call_tool("read_records", READ_CUSTOMERS)  # info: not heard
            await session.call_tool("fetch_document", {"path": "no/such.md"})  # a failure
            await heard.until(logs=4)
            return heard.logs

    return anyio.run(scenario)


def test_log_messages_at_metadata_name_tools_and_outcomes_and_carry_no_content(
    host: Host,
) -> None:
    completed, unknown, refused, failed = logs_of(host)
    assert (completed.level, completed.logger) == ("info", "toolwire")
    data = completed.data
    assert data == {
        "event": "tools/call", "tool_name": "read_records", "registered": True,
        "outcome": "completed", "tool_arguments_keys_count": 2,
        "tool_result_length": data["tool_result_length"], "content_withheld": True,
    }  # fmt: skip
    assert data["tool_result_length"] > 100
    assert unknown.level == "warning"
    assert unknown.data == {"event": "tools/call", "registered": False, "outcome": "refused",
                            "tool_name": tool_name("no_such_tool", frozenset()),
                            "content_withheld": True}  # fmt: skip
    assert str(unknown.data["tool_name"]).startswith("unknown:sha256:")
    assert (refused.level, refused.data["tool_name"], refused.data["outcome"]) == (
        "warning", "list_tables", "refused")  # fmt: skip
    assert (failed.level, failed.data["tool_name"], failed.data["outcome"]) == (
        "warning", "fetch_document", "error")  # fmt: skip
    heard = json.dumps([m.data for m in (completed, unknown, refused, failed)])
    for content in ("customers", "ada", "no/such.md", "no_such_tool", "Error"):
        assert content not in heard, content


def test_at_full_privacy_log_messages_carry_the_calls_content(host: Host) -> None:
    completed, unknown, _, failed = logs_of(host, "--privacy", "full")
    assert completed.data["tool_arguments"] == READ_CUSTOMERS
    assert "customers" in completed.data["tool_result"]
    assert unknown.data["tool_name"] == "no_such_tool"
    assert failed.data["tool_arguments"] == {"path": "no/such.md"}


def test_at_debug_a_host_hears_a_call_start_run_and_complete_without_content(host: Host) -> None:
    async def scenario() -> list[types.LoggingMessageNotificationParams]:
        heard = Heard()
        async with host.session(logging_callback=heard.log) as session:
            await set_level(session, "debug")
            await session.call_tool("read_records", READ_CUSTOMERS)
            await heard.until(logs=3)
            return heard.logs

    started, ran, completed = anyio.run(scenario)
    with host.store() as store:
        (run,) = store.list_runs()
    assert [m.level for m in (started, ran, completed)] == ["debug", "debug", "info"]
    assert [m.data["outcome"] for m in (started, ran, completed)] == ["started", "ran", "completed"]
    assert ran.data == {"event": "tools/call", "tool_name": "read_records", "registered": True,
                        "outcome": "ran", "run_id": run.id, "content_withheld": True}  # fmt: skip
    assert started.data == {"event": "tools/call", "tool_name": "read_records",
                            "registered": True, "outcome": "started",
                            "content_withheld": True}  # fmt: skip
    assert "customers" not in json.dumps([started.data, ran.data, completed.data])
