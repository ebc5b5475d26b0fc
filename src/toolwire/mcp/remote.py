"""MCP servers' tools as toolwire tools, through the same gate and the same seam as any tool.

A :class:`RemoteTool` is registered as ``<server>__<tool>`` (see :mod:`toolwire.mcp.spec`) in
the group ``mcp:<server>``. What the workspace says of its server decides the gate's inputs:
off unless ``enabled``, admin-only unless ``admin_only = false``, and the server's data class
(default the strictest). Its calls count against the run's remote-call budget (``remote``),
may overlap other calls of their turn only when the server says the tool only reads, and
never pause for approval on their own. Their results are untrusted, and a call of a tool the
server does not say only reads is consequential (see :mod:`toolwire.tools.labels`).

A call goes to the process's hub (:mod:`toolwire.mcp.hub`); a failure comes back as an error
result whose text the seam writes, and the details go to the log. Listing a workspace's
servers starts them (in parallel); a server that cannot be listed is left out with a line for
the operator, and the others are registered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp.types import Tool as McpTool

from toolwire.core.errors import ConfigError, ToolError
from toolwire.core.messages import ToolSpec
from toolwire.core.result import ToolResult
from toolwire.core.trust import Integrity
from toolwire.loop import seam
from toolwire.loop.live import LIVE
from toolwire.mcp.asks import answerer, attended
from toolwire.mcp.caller import Caller
from toolwire.mcp.connection import McpFailure, describe
from toolwire.mcp.convert import to_result
from toolwire.mcp.hub import HUB
from toolwire.mcp.spec import tool_name, tool_spec
from toolwire.mcp.stdio import STDOUT_LINE_BYTES
from toolwire.runs.questions import board
from toolwire.tools.api import ToolContext
from toolwire.tools.registry import Availability, ToolRegistry
from toolwire.workspace.mcp_servers import Launch, McpServer

log = logging.getLogger("toolwire.mcp")
# Tools taken from one server: each is sent in every request of a run that offers it, and
# OpenAI takes at most 128 tools a request.
MAX_TOOLS_PER_SERVER = 128


class RemoteTool:
    """One tool of one MCP server."""

    remote = True
    is_async = True
    requires_approval = False

    def __init__(
        self, *, spec: ToolSpec, server: McpServer, launch: Launch, remote_name: str,
        read_only: bool, title: str | None = None,
    ) -> None:  # fmt: skip
        self.spec = spec
        self.title = title  # the server's, for people; the model reads the description
        self.server = server.name
        self.group = server.group
        self.enabled_by_default = server.enabled
        self.requires_admin = server.admin_only
        self.data_class = server.data_class
        self.concurrent = read_only  # the server's hint; a tool that may write runs alone
        # Another process's answer carries words someone else chose: untrusted unless the
        # workspace says otherwise by name; a call is consequential unless the server says the
        # tool only reads (see toolwire.tools.labels).
        self.integrity = Integrity.UNTRUSTED
        self.read_only = read_only
        self.launch = launch
        self.remote_name = remote_name

    def __repr__(self) -> str:
        return f"<RemoteTool {self.spec.name!r} server={self.server!r}>"

    async def execute(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        caller = Caller(server=self.server, tool=self.spec.name, data_class=self.data_class,
                        turn=LIVE.get(), loop=asyncio.get_running_loop(),
                        attended=attended(), answerer=answerer(),
                        board=board())  # fmt: skip
        try:
            result = await HUB.call(self.launch, self.remote_name, dict(arguments), caller)
        except McpFailure as failure:
            log.warning("remote tool %r failed: %s", self.spec.name, failure)
            return ToolResult.error(failure_text(failure, self.spec.name, self.launch.timeout))
        return to_result(result, self.spec.name)


def failure_text(failure: McpFailure, name: str, timeout: float) -> str:
    """What the model reads about a failed remote call."""
    match failure.kind:
        case "start":
            return seam.remote_not_started(name)
        case "stopped":
            return seam.remote_stopped(name)
        case "timeout":
            return seam.remote_timeout(name, timeout)
        case "garbage":
            return seam.remote_garbage(name)
        case "protocol":
            return seam.remote_protocol_error(name)
        case "oversized":
            return seam.remote_oversized(name, STDOUT_LINE_BYTES)
        case "unauthorized":
            return seam.remote_unauthorized(name)


def add_remote_tools(
    registry: ToolRegistry, workspace: Any, *, only: Callable[[McpServer], bool] | None = None
) -> list[str]:
    """Register the tools of ``workspace``'s MCP servers (those ``only`` keeps); one line per
    server or tool that could not be registered, for the operator."""
    servers = [s for s in getattr(workspace, "mcp_servers", ()) if only is None or only(s)]
    if not servers:
        return []
    tools, problems = remote_tools(servers, workspace.env())
    for tool in tools:
        try:
            registry.register(tool)
        except ToolError as exc:
            problems.append(f'MCP server "{tool.server}": {exc}')
    return problems


def remote_tools(
    servers: Sequence[McpServer], environ: Mapping[str, str]
) -> tuple[list[RemoteTool], list[str]]:
    """The tools of ``servers``, listed in parallel, and the problems met."""
    problems: list[str] = []
    launches: list[tuple[McpServer, Launch]] = []
    for server in servers:
        try:
            launches.append((server, server.launch(environ)))
        except ConfigError as exc:
            problems.append(str(exc))
    tools: list[RemoteTool] = []
    listings = HUB.list_all([launch for _, launch in launches])
    for (server, launch), listing in zip(launches, listings, strict=True):
        if isinstance(listing, BaseException):
            problems.append(f'MCP server "{server.name}": no tools: {_why(listing)}')
            continue
        made, skipped = tools_of(server, launch, listing)
        tools += made
        problems += skipped
    return tools, problems


def tools_of(
    server: McpServer, launch: Launch, listed: Sequence[McpTool]
) -> tuple[list[RemoteTool], list[str]]:
    """``listed`` as tools, and a line for each one left out."""
    tools: dict[str, RemoteTool] = {}
    problems = []
    if len(listed) > MAX_TOOLS_PER_SERVER:
        problems.append(f'MCP server "{server.name}": only its first {MAX_TOOLS_PER_SERVER} '
                        f"of {len(listed)} tools are used")  # fmt: skip
    for listing in listed[:MAX_TOOLS_PER_SERVER]:
        name = tool_name(server.name, listing.name)
        try:
            if name in tools:
                raise ValueError(f"its name is {name!r} once made safe, like another's")
            spec = tool_spec(name, listing.description, listing.title, listing.input_schema)
        except ValueError as exc:
            problems.append(f'MCP server "{server.name}": tool {listing.name[:80]!r} left out: '
                            f"{exc}")  # fmt: skip
            continue
        hints = listing.annotations
        read_only = hints is not None and hints.read_only_hint is True
        tools[name] = RemoteTool(spec=spec, server=server, launch=launch,
                                 remote_name=listing.name, read_only=read_only,
                                 title=listing.title)  # fmt: skip
    return list(tools.values()), problems


def may_offer(
    server: McpServer, availability: Availability, requested: Sequence[str] | None
) -> bool:
    """Whether a run could be offered a tool of ``server``; if not, it is not started.

    A run that names its tools lists the servers of those names (so a misspelt one is caught);
    otherwise a server is listed when its tools are on, or one of them is switched on."""
    if availability.groups.get(server.group) is False:
        return False
    prefix = f"{server.name}__"
    if requested is not None:
        return any(name.startswith(prefix) for name in requested)
    switched_on = (on and name.startswith(prefix) for name, on in availability.tools.items())
    return server.enabled or any(switched_on)


def _why(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, McpFailure) else describe(exc)
