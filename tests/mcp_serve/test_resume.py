"""``toolwire mcp --http`` sessions resume: every event stream opens with a priming event and a
``retry:``, a held call's stream is ended by the server, and a host that comes back with
``Last-Event-ID`` gets the answer that was decided meanwhile; another session's ids replay
nothing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.streamable_http import EventMessage

from toolwire.mcp.events import RETRY_MS, BoundedEventStore

from .kit import ACCEPT, INITIALIZE, WAIT_SECONDS, Host, decide, tool_call

TEXT = "written after a reconnect\n"
VERSION = "2025-11-25"


def events(body: str) -> list[dict[str, str]]:
    """The SSE events of ``body``: each a dict of its fields."""
    found: list[dict[str, str]] = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            name, sep, value = line.partition(":")
            if sep and name:
                fields[name] = fields.get(name, "") + value.removeprefix(" ")
        if fields:
            found.append(fields)
    return found


def replayed(client: httpx.Client, url: str, headers: dict[str, str], wanted: str) -> str:
    """What a ``GET`` with these headers (a ``Last-Event-ID``) is sent, up to the first event
    holding ``wanted``, or all of it when the stream ends first (a replay stream stays open for
    what comes next)."""
    seen = ""
    with client.stream("GET", url, headers=headers) as response:
        for line in response.iter_lines():
            seen += line + "\n"
            if wanted in line:
                break
    return seen


def opened(client: httpx.Client, url: str) -> str:
    """A session's id, after the handshake."""
    first = client.post(url, json=INITIALIZE, headers=ACCEPT)
    assert first.status_code == 200, first.text
    session = first.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**ACCEPT, "mcp-session-id": session, "mcp-protocol-version": VERSION}
    assert client.post(url, json=done, headers=headers).status_code == 202
    return session


def test_a_held_calls_stream_ends_and_the_answer_comes_after_last_event_id(host: Host) -> None:
    target = host.demo / "files" / "notes" / "resumed.md"
    with host.http() as served, httpx.Client(timeout=WAIT_SECONDS) as client:
        client.headers["Authorization"] = f"Bearer {served.token}"
        session = opened(client, served.url)
        headers = {**ACCEPT, "mcp-session-id": session, "mcp-protocol-version": VERSION}
        call = {"jsonrpc": "2.0", "id": 7, **tool_call("write_file",
                {"path": "notes/resumed.md", "text": TEXT})}  # fmt: skip
        held = client.post(served.url, json=call, headers=headers)  # ends while the call waits
        sent = events(held.text)
        assert sent[0]["id"] and sent[0].get("data", "") == "" and sent[0]["retry"] == str(RETRY_MS)
        assert not any('"result"' in e.get("data", "") for e in sent)
        assert not target.exists()
        run_id = anyio.run(decide, host, "approve")
        last = sent[-1]["id"]
        again = replayed(client, served.url, {**headers, "last-event-id": last}, '"id":7')
    answers = [json.loads(e["data"]) for e in events(again) if e.get("data")]
    (answer,) = [a for a in answers if a.get("id") == 7]
    assert answer["result"]["content"] == [
        {"type": "text", "text": "wrote notes/resumed.md: 26 bytes, 1 lines."}
    ]
    assert target.read_text() == TEXT
    with host.store() as store:
        run = store.get_run(run_id)
    assert run is not None and run.status == "completed"


def test_the_sdk_client_reconnects_on_its_own_and_gets_the_held_answer(host: Host) -> None:
    async def scenario(url: str, token: str) -> types.CallToolResult:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=WAIT_SECONDS) as client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
            anyio.create_task_group() as group,
        ):
            await session.initialize()
            group.start_soon(decide, host, "approve")
            result = await session.call_tool("write_file", {"path": "notes/sdk.md", "text": TEXT})
        return result

    with host.http() as served:
        result = anyio.run(scenario, served.url, served.token or "")
    assert result.is_error is False
    assert result.content == [
        types.TextContent(type="text", text="wrote notes/sdk.md: 26 bytes, 1 lines.")
    ]


def test_a_session_replays_nothing_for_another_sessions_event_id(host: Host) -> None:
    with host.http() as served, httpx.Client(timeout=WAIT_SECONDS) as client:
        client.headers["Authorization"] = f"Bearer {served.token}"
        first, second = opened(client, served.url), opened(client, served.url)
        headers = {**ACCEPT, "mcp-protocol-version": VERSION}
        listed = client.post(served.url, headers={**headers, "mcp-session-id": first},
                             json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})  # fmt: skip
        theirs = events(listed.text)[0]["id"]
        own = replayed(client, served.url, {**headers, "mcp-session-id": first,
                                            "last-event-id": theirs}, "read_records")  # fmt: skip
        other = replayed(client, served.url, {**headers, "mcp-session-id": second,
                                              "last-event-id": theirs}, "read_records")  # fmt: skip
    assert "read_records" in own  # its own session is sent the listing again
    assert "read_records" not in other and '"result"' not in other


def test_the_store_replays_one_streams_later_messages_and_forgets_the_oldest() -> None:
    store = BoundedEventStore(max_events=4)

    def message(number: int) -> Any:
        return types.JSONRPCNotification(jsonrpc="2.0", method=f"m{number}")

    async def scenario() -> tuple[list[str], str | None, str | None, int]:
        prime = await store.store_event("1", None)
        await store.store_event("1", message(1))
        await store.store_event("2", message(2))
        await store.store_event("1", message(3))
        sent: list[EventMessage] = []

        async def send(event: EventMessage) -> None:
            sent.append(event)

        stream = await store.replay_events_after(prime, send)
        await store.store_event("1", message(4))  # the priming event is forgotten
        gone = await store.replay_events_after(prime, send)
        return [getattr(e.message, "method", "") for e in sent], stream, gone, store.size

    methods, stream, gone, size = asyncio.run(scenario())
    assert (methods, stream, gone, size) == (["m1", "m3"], "1", None, 4)
    assert "m1" not in repr(store) and repr(store) == "BoundedEventStore(events=4, max_events=4)"
    other = BoundedEventStore()
    assert asyncio.run(other.replay_events_after("1", _never)) is None


async def _never(event: EventMessage) -> None:
    raise AssertionError("nothing may be replayed")
