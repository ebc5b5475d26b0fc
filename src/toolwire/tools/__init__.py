"""Tools: the contract, the registry with its enable/disable cascade, and the policy gate.

The names load on first use (PEP 562): the policy's small values must not pull in pydantic.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolwire.tools.api import Effect, FunctionTool, Tool, ToolContext, User, tool
    from toolwire.tools.policy import Decision, Grant, Refusal, ToolPolicy
    from toolwire.tools.registry import Availability, ToolRegistry, ToolState
    from toolwire.trust import DataClass, TrustZone

_HOMES = {
    "Availability": "toolwire.tools.registry",
    "DataClass": "toolwire.trust",
    "Decision": "toolwire.tools.policy",
    "Effect": "toolwire.tools.api",
    "FunctionTool": "toolwire.tools.api",
    "Grant": "toolwire.tools.policy",
    "Refusal": "toolwire.tools.policy",
    "Tool": "toolwire.tools.api",
    "ToolContext": "toolwire.tools.api",
    "ToolPolicy": "toolwire.tools.policy",
    "ToolRegistry": "toolwire.tools.registry",
    "ToolState": "toolwire.tools.registry",
    "TrustZone": "toolwire.trust",
    "User": "toolwire.tools.api",
    "tool": "toolwire.tools.api",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'toolwire.tools' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "Availability",
    "DataClass",
    "Decision",
    "Effect",
    "FunctionTool",
    "Grant",
    "Refusal",
    "Tool",
    "ToolContext",
    "ToolPolicy",
    "ToolRegistry",
    "ToolState",
    "TrustZone",
    "User",
    "tool",
]
