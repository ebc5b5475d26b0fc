"""What the API does, apart from HTTP: prepare runs, list and toggle tools, call one tool.

A direct tool call goes through the same gate (``ToolPolicy.decide``) and the same seam
(``ToolLoop.invoke``: offered-set check, execution with every exception caught, both channels
bounded) as a call a model makes; it only skips the model. It runs in a worker thread, so a
blocking tool cannot stall the server. With no provider involved, nothing leaves the machine:
the trust zone is ``local``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from typing import Any

from toolwire.errors import ConfigError
from toolwire.inspector.errors import ApiError
from toolwire.inspector.models import (
    GroupRow,
    InvokeBody,
    InvokeResult,
    Refused,
    RunBody,
    ToolRow,
    ToolsList,
)
from toolwire.inspector.settings import InspectorSettings
from toolwire.inspector.stream import LiveRun
from toolwire.loop import RunOptions, ToolLoop
from toolwire.messages import ChatMessage, ToolCall
from toolwire.providers.base import CompletionRequest, CompletionResponse
from toolwire.providers.scripted import ScriptedProvider
from toolwire.runtime import RunRequest, Runtime
from toolwire.tools.api import ToolContext
from toolwire.tools.policy import Grant, TrustZone
from toolwire.tools.registry import ToolState


def prepare_run(settings: InspectorSettings, runtime: Runtime, body: RunBody) -> LiveRun:
    """The run ``body`` asks for, or a 422 naming the choice that cannot be served."""
    try:
        provider = settings.provider_factory(body.provider, body.model)
    except ConfigError as exc:
        raise ApiError(422, str(exc)) from None
    options = RunOptions(
        max_rounds=body.max_rounds,
        allowed_tools=body.allowed_tools,
        temperature=body.temperature,
        capture_raw=body.capture_raw,
        dry_run=body.dry_run,
    )
    context = ToolContext(user=settings.user, workspace=settings.workspace)
    messages = ([ChatMessage.system(body.system_prompt)] if body.system_prompt else []) + [
        ChatMessage.user(body.prompt)
    ]
    zone = TrustZone.parse(getattr(provider, "trust_zone", None))
    offered, _ = runtime.policy.offered(
        body.allowed_tools, context=context, grant=options.grant, zone=zone
    )
    request = RunRequest(
        messages=tuple(messages), provider=provider, model=body.model, options=options,
        context=context,
    )  # fmt: skip
    replay = settings.replay_label if isinstance(provider, ScriptedProvider) else None
    event = {
        "type": "context",
        "provider": provider.name,
        "model": body.model,
        "replay_label": replay,
        "tools": offered,
        "privacy_level": settings.privacy_level,
        "stored": settings.store is not None,
        "dry_run": body.dry_run,
    }
    return LiveRun(request=request, context=event)


def list_tools(settings: InspectorSettings) -> ToolsList:
    registry = settings.registry
    rows = [ToolRow(**_state_fields(s), why=_why(s)) for s in registry.states()]
    groups = [
        GroupRow(
            name=g,
            enabled=registry.availability.groups.get(g, True),
            overridden=g in registry.availability.groups,
        )
        for g in registry.groups()
    ]
    return ToolsList(tools=rows, groups=groups)


def _state_fields(state: ToolState) -> dict[str, Any]:
    return dataclasses.asdict(state)


def _why(state: ToolState) -> str:
    if not state.group_enabled:
        return f'group "{state.group}" is disabled'
    if state.overridden:
        return "enabled here" if state.tool_enabled else "disabled here"
    return "enabled by default" if state.default_enabled else "disabled by default"


def set_tool(settings: InspectorSettings, name: str, enabled: bool | None) -> None:
    if name not in settings.registry:
        raise ApiError(404, f'no tool is named "{name}"')
    if settings.store is not None:
        settings.store.set_tool_state(name, enabled)
    settings.registry.availability.set_tool(name, enabled)


def set_group(settings: InspectorSettings, name: str, enabled: bool | None) -> None:
    if name not in settings.registry.groups():
        raise ApiError(404, f'no tool group is named "{name}"')
    if settings.store is not None:
        settings.store.set_group_state(name, enabled)
    settings.registry.availability.set_group(name, enabled)


class _NoModel:
    """The provider of a direct call: there is none, and asking for one is a bug."""

    name = "none"

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        raise RuntimeError("a direct tool call has no model")


async def invoke_tool(
    settings: InspectorSettings, runtime: Runtime, name: str, body: InvokeBody
) -> InvokeResult:
    context = ToolContext(user=settings.user, workspace=settings.workspace)
    decision = runtime.policy.decide(name, context=context, grant=Grant(), zone=TrustZone.LOCAL)
    if not decision.allowed:
        refused = Refused(reason=str(decision.reason), detail=decision.detail)
        return InvokeResult(
            tool=name, content=None, is_error=True, artifacts=[], refused=refused, duration_ms=0
        )
    loop = ToolLoop(_NoModel(), settings.registry, policy=runtime.policy)
    call = ToolCall.of(f"direct_{uuid.uuid4().hex[:12]}", name, body.arguments)
    started = time.perf_counter()
    result, original = await asyncio.to_thread(
        asyncio.run, loop.invoke(call, frozenset({name}), context)
    )
    return InvokeResult(
        tool=name,
        content=result.content,
        is_error=result.is_error,
        artifacts=[a.to_dict() for a in result.artifacts],
        duration_ms=round((time.perf_counter() - started) * 1000, 2),
        original_bytes=original,
    )
