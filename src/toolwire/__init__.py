"""toolwire: LLM tool-calling loops in which a tool's result is typed.

``ToolResult.content`` is the only part of a tool's output that can reach a model provider;
``ToolResult.artifacts`` stay inside the run (trace, live inspector, audit store).

The names below load on first use (PEP 562), so ``import toolwire`` and ``toolwire --help``
stay quick: the HTTP client, the database layer and the web framework load only when a run,
a store or the inspector needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire.lazy import lazy_names

if TYPE_CHECKING:
    from toolwire.bounding import (
        ARTIFACT_BYTE_CAP,
        ARTIFACT_MAX_DEPTH,
        CONTENT_BYTE_CAP,
        BoundedContent,
        bound_artifacts,
        bound_content,
    )
    from toolwire.endings import LoopResult
    from toolwire.errors import ToolRefusal, ToolwireError
    from toolwire.lifecycle import RunStatus, TerminationReason
    from toolwire.loop import ToolLoop
    from toolwire.messages import ChatMessage, ToolCall, ToolSpec
    from toolwire.options import DEFAULT_MAX_ROUNDS, MAX_ROUNDS, RunOptions
    from toolwire.privacy import PrivacyLevel
    from toolwire.providers.base import CompletionRequest, CompletionResponse, Provider, Usage
    from toolwire.providers.scripted import ScriptedProvider
    from toolwire.providers.select import create_provider
    from toolwire.result import Artifact, ArtifactType, ToolResult
    from toolwire.runtime import OperatorDecision, RunOutcome, RunRequest, Runtime
    from toolwire.sealing import StateKey
    from toolwire.state import RunState
    from toolwire.tools.api import Effect, Tool, ToolContext, User, tool
    from toolwire.tools.policy import Grant, ToolPolicy
    from toolwire.tools.registry import ToolRegistry
    from toolwire.trace import RunStep, RunTrace, ToolInvocation
    from toolwire.trust import TrustZone

_HOMES = {
    "ARTIFACT_BYTE_CAP": "toolwire.bounding",
    "ARTIFACT_MAX_DEPTH": "toolwire.bounding",
    "CONTENT_BYTE_CAP": "toolwire.bounding",
    "DEFAULT_MAX_ROUNDS": "toolwire.options",
    "MAX_ROUNDS": "toolwire.options",
    "Artifact": "toolwire.result",
    "ArtifactType": "toolwire.result",
    "BoundedContent": "toolwire.bounding",
    "ChatMessage": "toolwire.messages",
    "CompletionRequest": "toolwire.providers.base",
    "CompletionResponse": "toolwire.providers.base",
    "Effect": "toolwire.tools.api",
    "Grant": "toolwire.tools.policy",
    "LoopResult": "toolwire.endings",
    "OperatorDecision": "toolwire.run",
    "PrivacyLevel": "toolwire.privacy",
    "Provider": "toolwire.providers.base",
    "RunOptions": "toolwire.options",
    "RunOutcome": "toolwire.run",
    "RunRequest": "toolwire.run",
    "RunState": "toolwire.state",
    "RunStatus": "toolwire.lifecycle",
    "RunStep": "toolwire.trace",
    "RunTrace": "toolwire.trace",
    "Runtime": "toolwire.runtime",
    "ScriptedProvider": "toolwire.providers.scripted",
    "StateKey": "toolwire.sealing",
    "TerminationReason": "toolwire.lifecycle",
    "Tool": "toolwire.tools.api",
    "ToolCall": "toolwire.messages",
    "ToolContext": "toolwire.tools.api",
    "ToolInvocation": "toolwire.trace",
    "ToolLoop": "toolwire.loop",
    "ToolPolicy": "toolwire.tools.policy",
    "ToolRefusal": "toolwire.errors",
    "ToolRegistry": "toolwire.tools.registry",
    "ToolResult": "toolwire.result",
    "ToolSpec": "toolwire.messages",
    "ToolwireError": "toolwire.errors",
    "TrustZone": "toolwire.trust",
    "Usage": "toolwire.providers.base",
    "User": "toolwire.tools.api",
    "bound_artifacts": "toolwire.bounding",
    "bound_content": "toolwire.bounding",
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
