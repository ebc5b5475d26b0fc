"""Tools: the contract, the registry with its enable/disable cascade, and the policy gate."""

from toolwire.tools.api import Effect, FunctionTool, Tool, ToolContext, User, tool
from toolwire.tools.policy import DataClass, Decision, Grant, Refusal, ToolPolicy, TrustZone
from toolwire.tools.registry import Availability, ToolRegistry, ToolState

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
