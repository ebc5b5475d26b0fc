"""toolwire: LLM tool-calling loops in which a tool's result is typed.

``ToolResult.content`` is the only part of a tool's output that can reach a model provider;
``ToolResult.artifacts`` stay inside the run (trace, live inspector, audit store).

The names below load on first use (PEP 562), so ``import toolwire`` and ``toolwire --help``
stay quick: the HTTP client, the database layer and the web framework load only when a run,
a store or the inspector needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire.core.lazy import lazy_names

if TYPE_CHECKING:
    from toolwire.core.bounding import (
        ARTIFACT_BYTE_CAP,
        ARTIFACT_MAX_DEPTH,
        CONTENT_BYTE_CAP,
        BoundedContent,
        bound_artifacts,
        bound_content,
    )
    from toolwire.core.errors import ToolRefusal, ToolwireError
    from toolwire.core.lifecycle import RunStatus, TerminationReason
    from toolwire.core.messages import ChatMessage, ToolCall, ToolSpec
    from toolwire.core.result import Artifact, ArtifactType, ToolResult
    from toolwire.core.sealing import StateKey
    from toolwire.core.trust import TrustZone
    from toolwire.loop.endings import LoopResult
    from toolwire.loop.loop import ToolLoop
    from toolwire.loop.state import RunState
    from toolwire.policy.options import DEFAULT_MAX_ROUNDS, MAX_ROUNDS, RunOptions
    from toolwire.policy.privacy import PrivacyLevel
    from toolwire.policy.trace import RunStep, RunTrace, ToolInvocation
    from toolwire.providers.base import (
        BaseProvider,
        CompletionRequest,
        CompletionResponse,
        Provider,
        Usage,
    )
    from toolwire.providers.fallback import Circuits, FallbackProvider
    from toolwire.providers.scripted import ScriptedProvider
    from toolwire.providers.select import create_provider
    from toolwire.runs.runtime import OperatorDecision, RunOutcome, RunRequest, Runtime
    from toolwire.tools.api import Effect, Tool, ToolContext, User, tool
    from toolwire.tools.policy import Grant, ToolPolicy
    from toolwire.tools.registry import ToolRegistry

_HOMES = {
    "ARTIFACT_BYTE_CAP": "toolwire.core.bounding",
    "ARTIFACT_MAX_DEPTH": "toolwire.core.bounding",
    "CONTENT_BYTE_CAP": "toolwire.core.bounding",
    "DEFAULT_MAX_ROUNDS": "toolwire.policy.options",
    "MAX_ROUNDS": "toolwire.policy.options",
    "Artifact": "toolwire.core.result",
    "ArtifactType": "toolwire.core.result",
    "BoundedContent": "toolwire.core.bounding",
    "BaseProvider": "toolwire.providers.base",
    "ChatMessage": "toolwire.core.messages",
    "Circuits": "toolwire.providers.fallback",
    "CompletionRequest": "toolwire.providers.base",
    "CompletionResponse": "toolwire.providers.base",
    "Effect": "toolwire.tools.api",
    "FallbackProvider": "toolwire.providers.fallback",
    "Grant": "toolwire.tools.policy",
    "LoopResult": "toolwire.loop.endings",
    "OperatorDecision": "toolwire.loop.run",
    "PrivacyLevel": "toolwire.policy.privacy",
    "Provider": "toolwire.providers.base",
    "RunOptions": "toolwire.policy.options",
    "RunOutcome": "toolwire.loop.run",
    "RunRequest": "toolwire.loop.run",
    "RunState": "toolwire.loop.state",
    "RunStatus": "toolwire.core.lifecycle",
    "RunStep": "toolwire.policy.trace",
    "RunTrace": "toolwire.policy.trace",
    "Runtime": "toolwire.runs.runtime",
    "ScriptedProvider": "toolwire.providers.scripted",
    "StateKey": "toolwire.core.sealing",
    "TerminationReason": "toolwire.core.lifecycle",
    "Tool": "toolwire.tools.api",
    "ToolCall": "toolwire.core.messages",
    "ToolContext": "toolwire.tools.api",
    "ToolInvocation": "toolwire.policy.trace",
    "ToolLoop": "toolwire.loop.loop",
    "ToolPolicy": "toolwire.tools.policy",
    "ToolRefusal": "toolwire.core.errors",
    "ToolRegistry": "toolwire.tools.registry",
    "ToolResult": "toolwire.core.result",
    "ToolSpec": "toolwire.core.messages",
    "ToolwireError": "toolwire.core.errors",
    "TrustZone": "toolwire.core.trust",
    "Usage": "toolwire.providers.base",
    "User": "toolwire.tools.api",
    "bound_artifacts": "toolwire.core.bounding",
    "bound_content": "toolwire.core.bounding",
    "create_provider": "toolwire.providers.select",
    "tool": "toolwire.tools.api",
}


__getattr__ = lazy_names(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ARTIFACT_BYTE_CAP",
    "ARTIFACT_MAX_DEPTH",
    "CONTENT_BYTE_CAP",
    "DEFAULT_MAX_ROUNDS",
    "MAX_ROUNDS",
    "Artifact",
    "ArtifactType",
    "BaseProvider",
    "BoundedContent",
    "ChatMessage",
    "Circuits",
    "CompletionRequest",
    "CompletionResponse",
    "Effect",
    "FallbackProvider",
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
