"""The MCP servers in a run's scope are its charter's: a process that carries the run on with
more servers does not offer their tools to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwire import (
    PrivacyLevel,
    RunOptions,
    RunRequest,
    Runtime,
    ScriptedProvider,
    ToolContext,
    ToolRegistry,
    ToolResult,
    tool,
)
from toolwire.core.messages import ToolSpec
from toolwire.core.sealing import StateKey
from toolwire.policy.charter import ProviderRef, in_scope, servers_of, submit
from toolwire.runs.runtime import OperatorDecision

CALLS: list[str] = []


@tool(data_class="public", requires_approval=True)
def jot(text: str) -> str:
    """Write a note."""
    CALLS.append(f"jot {text}")
    return "noted"


class Remote:
    """A tool of an MCP server, as the registry sees one."""

    remote = True
    group = "mcp:extra"
    enabled_by_default = True
    requires_admin = False
    data_class = "public"
    requires_approval = False

    def __init__(self, server: str) -> None:
        self.server = server
        self.spec = ToolSpec(name=f"{server}__peek", description="Peek.", parameters={
            "type": "object", "properties": {}})  # fmt: skip

    def execute(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        CALLS.append(f"{self.server} peek")
        return ToolResult.text("peeked")


def test_servers_of_names_the_remote_tools_servers_only() -> None:
    assert servers_of([jot, Remote("b"), Remote("a"), Remote("a")]) == ("a", "b")


def test_a_resumed_run_is_not_offered_the_tools_of_servers_outside_its_scope() -> None:
    CALLS.clear()
    key = StateKey.generate()
    provider = ScriptedProvider.from_turns([
        {"tool_calls": [{"name": "jot", "arguments": {"text": "a"}}]},
        {"tool_calls": [{"name": "extra__peek", "arguments": {}}]},
        {"content": "done"},
    ])  # fmt: skip
    submitting = Runtime(ToolRegistry([jot]), state_key=key)
    options = RunOptions(trust_zone="local")
    waiting = submitting.run_sync(RunRequest.of("go", provider=provider, options=options))
    assert waiting.pause is not None and waiting.result is not None
    charter = waiting.result.suspended.charter  # type: ignore[union-attr]
    assert charter is not None and charter.mcp_servers == ()
    # The same process goes on with a registry that also holds another server's tool.
    submitting.registry = ToolRegistry([jot, Remote("extra")])
    decision = OperatorDecision(action="approve", digest=waiting.pause.digest, actor="ops")
    done = submitting.resume_sync(waiting.run_id, decision, provider=provider)
    assert done.status.value == "completed"
    assert CALLS == ["jot a"]  # the other server's tool never ran
    refused = [s for s in done.steps if s.kind == "tool" and s.tool_name == "extra__peek"]
    assert len(refused) == 1 and refused[0].tool_is_error


def test_a_charter_that_names_no_scope_leaves_the_registry_to_decide() -> None:
    registry = ToolRegistry([jot, Remote("extra")])
    names = frozenset({"jot", "extra__peek"})
    level, ref = PrivacyLevel.METADATA, ProviderRef(name="p")
    unscoped = submit(provider=ref, options=RunOptions(), privacy=level, user=None,
                      workspace=None)  # fmt: skip
    assert unscoped.mcp_servers is None and in_scope(unscoped, names, registry) == names
    scoped = submit(provider=ref, options=RunOptions(), privacy=level, user=None,
                    workspace=None, servers=["other"])  # fmt: skip
    assert in_scope(scoped, names, registry) == {"jot"}
