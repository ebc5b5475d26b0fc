"""The registry a command-line or inspector run starts from: built-ins plus discovered tools."""

from __future__ import annotations

from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry


def default_registry(*, discover: bool = True) -> ToolRegistry:
    """Built-in tools, then third-party tools from the ``toolwire.tools`` entry points."""
    registry = ToolRegistry(builtin_tools())
    if discover:
        registry.discover()
    return registry
