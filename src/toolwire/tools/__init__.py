"""Tools: the contract, the registry with its enable/disable cascade, and the policy gate.

The names load on first use (PEP 562): the policy's small values must not pull in pydantic.

Layer: above ``workspace``. May import ``core``, ``providers`` and ``workspace``; never the
run's policy, the loop or anything above them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire.core.lazy import lazy_names

if TYPE_CHECKING:
    from toolwire.core.trust import DataClass, TrustZone
    from toolwire.tools.api import Effect, FunctionTool, Tool, ToolContext, User, tool
    from toolwire.tools.policy import Decision, Grant, Refusal, ToolPolicy
    from toolwire.tools.registry import Availability, ToolRegistry, ToolState

_HOMES = {
    "Availability": "toolwire.tools.registry",
    "DataClass": "toolwire.core.trust",
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
    "TrustZone": "toolwire.core.trust",
    "User": "toolwire.tools.api",
    "tool": "toolwire.tools.api",
}


__getattr__ = lazy_names(__name__, _HOMES)


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
