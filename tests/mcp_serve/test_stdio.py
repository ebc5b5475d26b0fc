"""``toolwire mcp`` over stdio, against the official SDK's client and raw JSON-RPC: what is
listed, what a call answers (content only), what the store keeps, and what the gate refuses."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolwire.core.result import ToolResult
from toolwire.core.trust import TrustZone
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore
from toolwire.tools.api import ToolContext
from toolwire.tools.defaults import default_registry
from toolwire.tools.disclosure import disclosed
from toolwire.workspace.config import load_workspace

from .kit import (
    CANARY,
    Host,
    handshake_and,
    raw_exchange,
    tool_call,
)

SERVED_BY_DEFAULT = [
    "read_records", "search_records", "count_records", "record_history", "record_tree",
    "browse_folder", "find_files", "file_info", "find_missing_files", "file_references",
    "search_documents", "fetch_document", "write_file", "leak",
]  # fmt: skip
READ_CUSTOMERS = {"table": "customers", "limit": 3}
UNKNOWN = 'Unknown tool: "{}"; tools/list names the tools this server has'
NOT_OFFERED = 'Tool "{}" is not offered to this session; tools/list names the ones it is'


def listed(host: Host, *args: str) -> list[types.Tool]:
    async def scenario() -> list[types.Tool]:
        async with host.session(*args) as session:
            return (await session.list_tools()).tools

    return anyio.run(scenario)


def called(host: Host, name: str, arguments: dict[str, object], *args: str) -> types.CallToolResult:
    async def scenario() -> types.CallToolResult:
        async with host.session(*args) as session:
            return await session.call_tool(name, arguments)

    return anyio.run(scenario)


def expected_content(
    demo: Path,
    name: str,
    arguments: dict[str, object],
    zone: TrustZone = TrustZone.EXTERNAL_GLOBAL,
) -> str:
    """What the tool itself answers, called in this process over the same workspace."""
    tool = default_registry().get(name)
    assert tool is not None
    workspace = load_workspace(demo / "workspace.toml")
    context = ToolContext(workspace=workspace, trust_zone=zone)
    result = tool.execute(arguments, context)
    assert isinstance(result, ToolResult)
    return disclosed(result, context).content  # personal data as the host's zone may read it


def test_a_local_admin_host_reads_customers_email_addresses(host: Host) -> None:
    result = called(host, "read_records", READ_CUSTOMERS, "--trust-zone", "local", "--admin")
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    assert block.text == expected_content(
        host.demo, "read_records", READ_CUSTOMERS, TrustZone.LOCAL
    )
    assert "email: ada@example.com" in block.text
    external = called(host, "read_records", READ_CUSTOMERS)
    (masked,) = external.content
    assert isinstance(masked, types.TextContent)
    assert "email: ***@***" in masked.text and "ada@example.com" not in masked.text


def test_the_host_gets_the_tools_the_gate_offers_external_global(host: Host) -> None:
    tools = listed(host)
    assert [t.name for t in tools] == SERVED_BY_DEFAULT
    registry = default_registry()
    for served in tools:
        spec = registry.get(served.name)
        if spec is None:  # the plug-in
            continue
        assert served.description == spec.spec.description
        assert served.input_schema == dict(spec.spec.parameters)
    hints = {t.name: t.annotations for t in tools}
    assert hints["read_records"] == types.ToolAnnotations(
        title="Read records", read_only_hint=True, open_world_hint=False
    )
    assert hints["write_file"] == types.ToolAnnotations(
        title="Write file", read_only_hint=False, destructive_hint=True, idempotent_hint=True,
        open_world_hint=False,
    )  # fmt: skip
    assert {t.name: t.title for t in tools}["fetch_document"] == "Fetch document"


def test_a_tool_that_reaches_outside_the_workspace_says_so(host: Host) -> None:
    tools = {t.name: t for t in listed(host, "--trust-zone", "local", "--admin")}
    probe = tools["probe_url"].annotations  # an HTTP request to the workspace's base URL
    assert probe is not None and probe.open_world_hint is True and probe.title == "Probe url"
    inside = [n for n, t in tools.items() if t.annotations and not t.annotations.open_world_hint]
    assert len(inside) == len(tools) - 1


def test_a_call_answers_one_text_block_of_content_and_nothing_else(host: Host) -> None:
    result = called(host, "read_records", READ_CUSTOMERS, "--privacy", "full")
    assert result.is_error is False and result.structured_content is None
    assert result.content == [
        types.TextContent(type="text", text=expected_content(host.demo, "read_records",
                                                             READ_CUSTOMERS))
    ]  # fmt: skip
    with host.store() as store:
        (run,) = store.list_runs()
        stored = store.get_run(run.id)
    assert stored is not None
    assert (stored.status, stored.provider) == ("completed", "direct call")
    (step,) = stored.steps
    assert step["kind"] == "tool" and step["tool_name"] == "read_records"
    (artifact,) = step["tool_artifacts"]
    assert (artifact["type"], artifact["label"]) == ("table", "customers records")


def test_artifacts_never_reach_the_host_but_are_kept_with_the_call(host: Host) -> None:
    raw = raw_exchange(
        host,
        handshake_and(tool_call("leak", {"word": "hi"}), tool_call("read_records", READ_CUSTOMERS)),
        "--privacy", "full",
    )  # fmt: skip
    replies = [json.loads(line) for line in raw.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3]
    assert replies[1]["result"]["content"] == [{"type": "text", "text": "said hi"}]
    assert CANARY not in raw.decode()
    for absent in ("structuredContent", "artifact", "canary", "customers records", '"columns"'):
        assert absent not in raw.decode(), absent
    with host.store(PrivacyLevel.FULL) as store:
        runs = store.list_runs()
        kept = [store.get_run(r.id) for r in runs]
    artifacts = [a for run in kept if run for s in run.steps for a in s.get("tool_artifacts", [])]
    assert {a["label"] for a in artifacts} == {"canary table", "canary text", "customers records"}
    assert CANARY in json.dumps(artifacts)  # produced, and kept where the operator looks


def refusal(host: Host, name: str, *args: str) -> MCPError:
    """The protocol error the SDK's client raises for a call of ``name``."""

    async def scenario() -> MCPError:
        async with host.session(*args) as session:
            try:
                await session.call_tool(name, {})
            except MCPError as error:
                return error
        raise AssertionError(f"the call of {name} was answered")

    return anyio.run(scenario)


def test_a_tool_the_gate_refuses_is_neither_listed_nor_callable(host: Host) -> None:
    assert "list_tables" not in [t.name for t in listed(host)]  # configuration > content
    refused = refusal(host, "list_tables")
    assert refused.code == types.INVALID_PARAMS
    assert refused.message == NOT_OFFERED.format("list_tables")
    unknown = refusal(host, "no_such_tool")
    assert (unknown.code, unknown.message) == (types.INVALID_PARAMS, UNKNOWN.format("no_such_tool"))
    with host.store() as store:
        assert store.list_runs() == []  # nothing ran: no run to show


def test_an_unknown_tool_is_a_json_rpc_error_and_a_failed_one_a_result(host: Host) -> None:
    calls = [tool_call("x" * 300, {}), tool_call("fetch_document", {"path": "no/such.md"})]
    unknown, failed = (json.loads(line) for line in raw_exchange(host, handshake_and(*calls))
                       .splitlines()[1:])  # fmt: skip
    error = {"code": -32602, "message": UNKNOWN.format("x" * 80 + "…")}
    assert unknown == {"jsonrpc": "2.0", "id": 2, "error": error}
    assert failed["result"]["isError"] is True and "error" not in failed


def test_a_trusted_zone_lists_more_and_admin_only_tools_need_admin(host: Host) -> None:
    local = [t.name for t in listed(host, "--trust-zone", "local")]
    assert "list_tables" in local and "read_source" not in local
    assert called(host, "list_tables", {}, "--trust-zone", "local").is_error is False
    admin = [t.name for t in listed(host, "--trust-zone", "local", "--admin")]
    assert "read_source" in admin and "get_env" in admin
    assert "read_source" not in [t.name for t in listed(host, "--admin")]  # zone still binds


def test_bad_arguments_are_the_seams_error_for_the_host(host: Host) -> None:
    result = called(host, "read_records", {"table": "customers", "limit": "many"})
    assert result.is_error is True
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    assert block.text.startswith('Error: invalid arguments for tool "read_records": limit:')


def test_a_misspelt_trust_zone_is_one_clear_line(host: Host) -> None:
    done = host.run("--trust-zone", "moon")
    assert done.returncode == 2 and done.stdout == ""
    assert "unknown trust zone 'moon'" in done.stderr and "Traceback" not in done.stderr


def test_a_missing_workspace_is_one_clear_line(host: Host) -> None:
    done = host.run("--workspace", str(host.tmp / "nowhere.toml"))
    assert done.returncode == 1 and done.stdout == ""
    assert "nowhere.toml" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_stdout_carries_only_the_protocol(host: Host) -> None:
    raw = raw_exchange(host, handshake_and({"method": "tools/list"}))
    lines = raw.splitlines()
    assert [json.loads(line)["id"] for line in lines] == [1, 2]


def test_data_dir_keeps_the_calls_where_the_demo_keeps_its_runs(host: Host) -> None:
    folder = host.tmp / "demo-data"
    result = called(host, "count_records", {"table": "customers"}, "--data-dir", str(folder))
    assert result.is_error is False
    with RunStore.open(str(folder / "runs.db")) as store:
        assert [r.provider for r in store.list_runs()] == ["direct call"]
    assert not host.db.exists()  # not the store $TOOLWIRE_DB names
