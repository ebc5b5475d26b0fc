"""An MCP server's answers are untrusted, and its tools consequential unless it says they only
read: a local write planned after one does not run unattended (over a real stdio server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.types import Tool as McpTool
from mcp.types import ToolAnnotations

from toolwire import ChatMessage, ScriptedProvider, ToolLoop, tool
from toolwire.core.trust import Integrity
from toolwire.loop import seam
from toolwire.mcp.remote import tools_of
from toolwire.policy.trace import RunTrace, ToolStep
from toolwire.tools.labels import integrity_of, is_consequential
from toolwire.workspace.mcp_servers import Launch, McpServer

from .kit import ADMIN, PYTHON, remote_registry, script, workspace

SCHEMA = {"type": "object", "properties": {}}
SENT: list[str] = []


@tool(data_class="public", consequential=True, integrity="trusted")
def send_note(text: str) -> str:
    """Send a note."""
    SENT.append(text)
    return "sent"


def test_every_mcp_tool_is_untrusted_and_consequential_unless_it_only_reads() -> None:
    listed = [McpTool(name="get_page", input_schema=SCHEMA,
                      annotations=ToolAnnotations(read_only_hint=True)),
              McpTool(name="post", input_schema=SCHEMA)]  # fmt: skip
    tools, problems = tools_of(McpServer(name="docs"), Launch(name="docs", timeout=1.0), listed)
    assert problems == []
    assert [(t.spec.name, integrity_of(t), is_consequential(t)) for t in tools] == [
        ("docs__get_page", Integrity.UNTRUSTED, False),
        ("docs__post", Integrity.UNTRUSTED, True),
    ]
    trusting = {"docs__get_page": Integrity.TRUSTED}
    assert integrity_of(tools[0], trusting) is Integrity.TRUSTED


def test_a_write_after_a_real_servers_answer_is_refused_unattended(tmp_path: Path) -> None:
    SENT.clear()
    ws = workspace(tmp_path, f"""
[mcp_servers.canary]
command = "{PYTHON}"
args = [{script("canary.py")}]
pass_env = ["CANARY_0"]
enabled = true
admin_only = false
data_class = "public"
""", environ={"CANARY_0": "c0"})  # fmt: skip
    registry, problems = remote_registry(ws, trusted=False)
    assert problems == []
    registry.register(send_note)
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "canary__probe", "arguments": {"n": 0}}]},
        {"tool_calls": [{"name": "send_note", "arguments": {"text": "x"}}]},
        {"content": "done"},
    ]
    loop = ToolLoop(ScriptedProvider.from_turns(turns), registry)
    trace = RunTrace()
    loop.run_sync([ChatMessage.user("go")], context=ADMIN, trace=trace)
    probe, send = [s for s in trace.steps if isinstance(s, ToolStep)]
    assert (probe.tool_result, probe.tool_integrity) == ("probe 0 answered", "untrusted")
    assert send.tool_result == seam.untrusted_context("send_note", "canary__probe", 1)
    assert SENT == []
