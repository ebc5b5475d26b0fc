"""The tool registry: names to tools, discovery, and enable/disable state with its cascade.

Effective state is ``group enabled and tool enabled``. A tool's own state is its override if one
is set, else its default; a group's is its override if set, else enabled. A tool override can
never re-enable a tool inside a disabled group.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from toolwire.core.errors import ConfigError, DuplicateToolError, ToolError
from toolwire.core.messages import ToolSpec
from toolwire.core.trust import DataClass
from toolwire.tools.api import Tool, is_remote

ENTRY_POINT_GROUP = "toolwire.tools"
# A name every provider accepts: OpenAI allows [a-zA-Z0-9_-]{1,64}, Anthropic the same set,
# Gemini wants a letter or underscore first. Checked once, here, so none is ever sent.
TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
log = logging.getLogger("toolwire.tools")


@dataclass(frozen=True, slots=True)
class ToolState:
    """One row of the tools listing: the effective state and why."""

    name: str
    description: str
    group: str
    enabled: bool
    tool_enabled: bool
    group_enabled: bool
    default_enabled: bool
    overridden: bool
    requires_admin: bool
    server: str | None = None  # the MCP server a remote tool comes from


@dataclass(slots=True)
class Availability:
    """Sparse enable/disable overrides for tools and groups."""

    tools: dict[str, bool] = field(default_factory=dict)
    groups: dict[str, bool] = field(default_factory=dict)

    def set_tool(self, name: str, enabled: bool | None) -> None:
        """Override a tool's state; ``None`` clears the override."""
        _set(self.tools, name, enabled)

    def set_group(self, name: str, enabled: bool | None) -> None:
        _set(self.groups, name, enabled)


def _set(overrides: dict[str, bool], name: str, enabled: bool | None) -> None:
    if enabled is None:
        overrides.pop(name, None)
    else:
        overrides[name] = enabled


class ToolRegistry:
    """Registered tools in registration order, with their availability."""

    def __init__(self, tools: Iterable[Tool] = (), availability: Availability | None = None):
        self._tools: dict[str, Tool] = {}
        # The tool registered under a name, or None: the dict's own ``get``, since it runs
        # several times for every call a model makes.
        self.get: Callable[[str], Tool | None] = self._tools.get
        self.availability = availability or Availability()
        for t in tools:
            self.register(t)

    def register(self, tool: Tool) -> Tool:
        name = tool.spec.name
        if TOOL_NAME.fullmatch(name) is None:
            shown = name if len(name) <= 80 else name[:80] + "…"
            raise ToolError(
                f"tool name {shown!r} would be refused by a provider: use 1 to 64 letters, "
                "digits, _ or -, starting with a letter or _"
            )
        try:
            DataClass.parse(tool.data_class)
        except ConfigError as exc:
            raise ToolError(f'tool "{name}": {exc}') from None
        if name in self._tools:
            raise DuplicateToolError(f'a tool named "{name}" is already registered')
        self._tools[name] = tool
        return tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def groups(self) -> list[str]:
        return list(dict.fromkeys(t.group for t in self._tools.values()))

    def specs(self, names: Iterable[str]) -> list[ToolSpec]:
        """Specs for ``names``, in registry order."""
        wanted = set(names)
        return [t.spec for n, t in self._tools.items() if n in wanted]

    def is_enabled(self, name: str) -> bool:
        """What :meth:`_enabled` decides, in one call: the gate asks it for every call."""
        tool = self._tools.get(name)
        if tool is None:
            return False
        availability = self.availability
        if availability.groups and not availability.groups.get(tool.group, True):
            return False
        override = availability.tools.get(name) if availability.tools else None
        return tool.enabled_by_default if override is None else override

    def enabled_names(self) -> list[str]:
        return [n for n, t in self._tools.items() if self._enabled(t)]

    def _enabled(self, tool: Tool) -> bool:
        """The cascade alone, without building a state row: this runs for every tool per run."""
        if not self.availability.groups.get(tool.group, True):
            return False
        override = self.availability.tools.get(tool.spec.name)
        return tool.enabled_by_default if override is None else override

    def states(self) -> list[ToolState]:
        return [self._state(t) for t in self._tools.values()]

    def _state(self, tool: Tool) -> ToolState:
        name, group = tool.spec.name, tool.group
        override = self.availability.tools.get(name)
        tool_enabled = tool.enabled_by_default if override is None else override
        group_enabled = self.availability.groups.get(group, True)
        return ToolState(
            name=name,
            description=tool.spec.description,
            group=group,
            enabled=group_enabled and tool_enabled,
            tool_enabled=tool_enabled,
            group_enabled=group_enabled,
            default_enabled=tool.enabled_by_default,
            overridden=override is not None,
            requires_admin=tool.requires_admin,
            server=_server(tool),
        )

    def discover(self, group: str = ENTRY_POINT_GROUP) -> list[str]:
        """Register third-party tools from an entry-point group; return the names added.

        An entry point may name a tool, an iterable of tools, or a callable returning either.
        One that fails to load, or names a tool already registered, is logged and skipped: a
        broken plugin must neither stop the rest nor shadow a built-in.
        """
        added: list[str] = []
        for point in entry_points(group=group):
            try:
                loaded = point.load()
                tools = list(
                    _as_tools(loaded() if callable(loaded) and not _is_tool(loaded) else loaded)
                )
            except Exception:
                log.exception("tool entry point %r failed to load", point.name)
                continue
            for t in tools:
                if t.spec.name in self._tools:  # never shadow a tool registered earlier
                    log.error(
                        "tool entry point %r: %r is already registered", point.name, t.spec.name
                    )
                    continue
                self.register(t)
                added.append(t.spec.name)
        return added


def _server(tool: Tool) -> str | None:
    server = getattr(tool, "server", None) if is_remote(tool) else None
    return server if isinstance(server, str) else None


def _is_tool(value: Any) -> bool:
    return isinstance(value, Tool)


def _as_tools(value: Any) -> Sequence[Tool]:
    if _is_tool(value):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
        items = list(value)
        if all(_is_tool(v) for v in items):
            return items
    raise TypeError(f"entry point gave {type(value).__name__}, not a tool or tools")
