"""Read-only resources of ``toolwire mcp``: this server's runs at its privacy level without
artifacts, never another server's; the workspace's documents through ``fetch_document``,
masked for the host's zone; an unknown URI is ``-32602``."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from toolwire.mcp.resources import DOCUMENT_TEMPLATE, RUN_TEMPLATE, RUNS

from .kit import CANARY, Host, handshake_and, raw_exchange

NO_RUN = RUNS + "00000000-0000-4000-8000-000000000000"
RUN_REF = types.ResourceTemplateReference(type="ref/resource", uri=RUN_TEMPLATE)


async def read(session: Any, uri: str) -> str:
    result = await session.read_resource(uri)
    (contents,) = result.contents
    assert isinstance(contents, types.TextResourceContents) and contents.uri == uri
    return contents.text


def test_the_server_declares_resources_and_lists_its_templates(host: Host) -> None:
    messages = handshake_and({"method": "resources/templates/list"}, {"method": "resources/list"})
    answers = [json.loads(line) for line in raw_exchange(host, messages).splitlines()]
    assert answers[0]["result"]["capabilities"]["resources"] == {
        "subscribe": False, "listChanged": False,
    }  # fmt: skip
    templates = answers[1]["result"]["resourceTemplates"]
    assert [(t["name"], t["uriTemplate"]) for t in templates] == [
        ("run", RUN_TEMPLATE), ("document", DOCUMENT_TEMPLATE),
    ]  # fmt: skip
    assert answers[2]["result"]["resources"] == []  # no call yet: no run of this server


def test_a_host_reads_its_calls_run_at_full_privacy_without_artifacts(host: Host) -> None:
    async def scenario() -> tuple[list[types.Resource], str, types.CompleteResult]:
        async with host.session("--privacy", "full") as session:
            await session.call_tool("leak", {"word": "hello"})
            listed = (await session.list_resources()).resources
            text = await read(session, listed[0].uri)
            completed = await session.complete(RUN_REF, {"name": "run_id", "value": ""})
            return listed, text, completed

    listed, text, completed = anyio.run(scenario)
    with host.store() as store:
        (run,) = store.list_runs()
    assert [r.uri for r in listed] == [RUNS + run.id]
    record = json.loads(text)
    assert (record["id"], record["status"]) == (run.id, "completed")
    assert record["privacy_level"] == "full"
    (step,) = record["steps"]
    assert step["tool_name"] == "leak" and step["tool_result"] == "said hello"
    assert step["tool_artifacts_count"] == 2 and "tool_artifacts" not in step
    assert CANARY not in text  # the artifacts held it; the content never did
    assert completed.completion.values == [run.id]


def test_at_metadata_a_run_is_read_without_content(host: Host) -> None:
    async def scenario() -> str:
        async with host.session() as session:
            await session.call_tool("leak", {"word": "quiet words"})
            (resource,) = (await session.list_resources()).resources
            return await read(session, resource.uri)

    text = anyio.run(scenario)
    record = json.loads(text)
    (step,) = record["steps"]
    assert record["privacy_level"] == "metadata" and record["final_answer"] is None
    assert "quiet words" not in text and "said" not in text and "tool_result" not in step


def test_a_run_of_another_server_is_not_found_like_a_run_that_does_not_exist(host: Host) -> None:
    async def call_as(*args: str) -> str:
        async with host.session(*args) as session:
            await session.call_tool("leak", {"word": "mine"})
            (resource,) = (await session.list_resources()).resources
            return resource.uri

    async def read_as(uri: str, *args: str) -> tuple[list[types.Resource], MCPError]:
        async with host.session(*args) as session:
            listed = (await session.list_resources()).resources
            with pytest.raises(MCPError) as raised:
                await session.read_resource(uri)
            return listed, raised.value

    theirs = anyio.run(call_as, "--trust-zone", "local", "--admin", "--privacy", "full")
    listed, refused = anyio.run(read_as, theirs)  # another actor, in another zone
    _, missing = anyio.run(read_as, NO_RUN)
    assert listed == []
    assert refused.error.code == missing.error.code == types.INVALID_PARAMS
    assert refused.error.message.replace(theirs, "X") == missing.error.message.replace(NO_RUN, "X")
    assert "Resource not found" in refused.error.message


def test_a_document_is_read_as_fetch_document_reads_it_for_the_zone(host: Host) -> None:
    async def scenario(*args: str) -> str:
        async with host.session(*args) as session:
            return await read(session, "toolwire://documents/guides/returns.md")

    external = anyio.run(scenario)
    local = anyio.run(scenario, "--trust-zone", "local")
    assert external.startswith("guides/returns.md: ")
    assert "returns@shop.example" not in external and "***@***" in external
    assert "returns@shop.example" in local
    with host.store() as store:
        runs = store.list_runs()
    assert len(runs) == 2 and all(r.provider == "direct call" for r in runs)  # each read recorded


@pytest.mark.parametrize(
    "uri",
    ["toolwire://elsewhere/x", "file:///etc/passwd", "toolwire://documents/../workspace.toml",
     "toolwire://documents/nothing.md"],
)  # fmt: skip
def test_an_unknown_uri_is_invalid_params_naming_it(host: Host, uri: str) -> None:
    async def scenario() -> MCPError:
        async with host.session() as session:
            with pytest.raises(MCPError) as raised:
                await session.read_resource(uri)
            return raised.value

    error = anyio.run(scenario)
    assert error.error.code == types.INVALID_PARAMS
    assert repr(uri) in error.error.message or uri in error.error.message
    assert "Traceback" not in error.error.message


def test_a_run_kept_in_full_is_read_at_the_servers_lower_level(host: Host) -> None:
    async def call_in_full() -> str:
        async with host.session("--privacy", "full") as session:
            await session.call_tool("leak", {"word": "kept in full"})
            (resource,) = (await session.list_resources()).resources
            return resource.uri

    async def read_at_metadata(uri: str) -> str:
        async with host.session() as session:
            return await read(session, uri)

    uri = anyio.run(call_in_full)
    text = anyio.run(read_at_metadata, uri)
    record = json.loads(text)
    (step,) = record["steps"]
    assert record["privacy_level"] == "metadata" and record["final_answer"] is None
    assert "kept in full" not in text and "tool_result" not in step
    assert step["tool_name"] == "leak" and step["content_withheld"] is True
