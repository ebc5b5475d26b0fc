"""What the MCP tests share: where the servers are, a workspace writer, a run helper.

The servers nobody here wrote come from PyPI (the dev extra puts ``mcp-server-time``,
``mcp-server-git`` and ``mcp-server-fetch`` on PATH) and from npm (``scripts/test`` installs
``tests/mcp_servers`` with ``npm ci``); ``servers/`` holds the ones written here to misbehave.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolwire import ChatMessage, RunOptions, ScriptedProvider, ToolLoop, ToolRegistry
from toolwire.core.trust import Integrity
from toolwire.loop.loop import LoopResult
from toolwire.mcp.remote import add_remote_tools
from toolwire.policy.trace import RunTrace
from toolwire.tools.api import ToolContext, User
from toolwire.workspace.config import Workspace, load_workspace

from ..served import free_port

NODE_BIN = Path(__file__).parents[1] / "mcp_servers" / "node_modules" / ".bin"
EVERYTHING = NODE_BIN / "mcp-server-everything"
FILESYSTEM = NODE_BIN / "mcp-server-filesystem"
SERVERS = Path(__file__).parent / "servers"
PYTHON = sys.executable
ADMIN = ToolContext(user=User("ops", is_admin=True))


def script(name: str) -> str:
    """A test server's script, as a TOML string."""
    return f'"{SERVERS / name}"'


def workspace(
    folder: Path, toml: str, environ: Mapping[str, str] | None = None, name: str = "w.toml"
) -> Workspace:
    """Load ``toml`` written into ``folder``; ``environ`` replaces the process environment."""
    path = folder / name
    path.write_text(toml)
    loaded = load_workspace(path)
    return loaded if environ is None else dataclasses.replace(loaded, environ=environ)


def remote_registry(ws: Workspace, *, trusted: bool = True) -> tuple[ToolRegistry, list[str]]:
    """The workspace's servers' tools; ``trusted``: their answers are labelled trusted, as a
    workspace would label a server it runs itself, so the run's containment holds none of
    their calls (tests/mcp/test_containment.py tests the untrusted default)."""
    registry = ToolRegistry()
    problems = add_remote_tools(registry, ws)
    if trusted:
        for tool in registry:
            tool.integrity = Integrity.TRUSTED  # type: ignore[attr-defined]  # a RemoteTool's
    return registry, problems


def run(
    registry: ToolRegistry,
    turns: Sequence[Any],
    *,
    context: ToolContext = ADMIN,
    trace: RunTrace | None = None,
    **options: Any,
) -> LoopResult:
    """A scripted run: ``turns`` are lists of calls, then the answer ``done``."""
    script_turns = [{"tool_calls": list(t)} for t in turns] + [{"content": "done"}]
    loop = ToolLoop(ScriptedProvider.from_turns(script_turns), registry)
    options.setdefault("trust_zone", "local")
    return asyncio.run(
        loop.run([ChatMessage.user("go")], context=context, options=RunOptions(**options),
                 trace=trace)
    )  # fmt: skip


def answers(result: LoopResult) -> list[tuple[str, str, bool]]:
    return [(i.name, i.result, i.is_error) for i in result.trace]


@contextmanager
def http_server(name: str, *args: str) -> Iterator[str]:
    """The MCP server script ``name`` serving streamable HTTP on a free loopback port: its URL
    once the port answers (at most 30 s), the process stopped after."""
    port = free_port()
    process = subprocess.Popen(
        [PYTHON, str(SERVERS / name), str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
