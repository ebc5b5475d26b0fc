"""toolwire: LLM tool-calling loops in which a tool's result is typed.

``ToolResult.content`` is the only part of a tool's output that can reach a model provider;
``ToolResult.artifacts`` stay inside the run (trace, live inspector, audit store).
"""

from toolwire.bounding import (
    ARTIFACT_BYTE_CAP,
    ARTIFACT_MAX_DEPTH,
    CONTENT_BYTE_CAP,
    BoundedContent,
    bound_artifacts,
    bound_content,
)
from toolwire.errors import ToolRefusal, ToolwireError
from toolwire.lifecycle import RunStatus
from toolwire.loop import (
    DEFAULT_MAX_ROUNDS,
    MAX_ROUNDS,
    LoopResult,
    RunOptions,
    TerminationReason,
    ToolLoop,
)
from toolwire.messages import ChatMessage, ToolCall, ToolSpec
from toolwire.privacy import PrivacyLevel
from toolwire.providers import (
    CompletionRequest,
    CompletionResponse,
    Provider,
    ScriptedProvider,
    Usage,
)
from toolwire.providers.select import create_provider
from toolwire.result import Artifact, ArtifactType, ToolResult
from toolwire.runtime import OperatorDecision, RunOutcome, RunRequest, Runtime
from toolwire.sealing import StateKey
from toolwire.state import RunState
from toolwire.tools import (
    Effect,
    Grant,
    Tool,
    ToolContext,
    ToolPolicy,
    ToolRegistry,
    TrustZone,
    User,
    tool,
)
from toolwire.trace import RunStep, RunTrace, ToolInvocation

__all__ = [
    "ARTIFACT_BYTE_CAP",
    "ARTIFACT_MAX_DEPTH",
    "CONTENT_BYTE_CAP",
    "DEFAULT_MAX_ROUNDS",
    "MAX_ROUNDS",
    "Artifact",
    "ArtifactType",
    "BoundedContent",
    "ChatMessage",
    "CompletionRequest",
    "CompletionResponse",
    "Effect",
    "Grant",
    "LoopResult",
    "OperatorDecision",
    "PrivacyLevel",
    "Provider",
    "RunOptions",
    "RunOutcome",
    "RunRequest",
    "RunState",
    "RunStatus",
    "RunStep",
    "RunTrace",
    "Runtime",
    "ScriptedProvider",
    "StateKey",
    "TerminationReason",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolInvocation",
    "ToolLoop",
    "ToolPolicy",
    "ToolRefusal",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "ToolwireError",
    "TrustZone",
    "Usage",
    "User",
    "bound_artifacts",
    "bound_content",
    "create_provider",
    "tool",
]
