"""What the API does, apart from HTTP: prepare runs, list and toggle tools, call one tool.

A direct tool call goes through the same gate (``ToolPolicy.decide``) and the same seam
(``ToolLoop.invoke``: offered-set check, execution with every exception caught, both channels
bounded) as a call a model makes; it only skips the model. It runs in a worker thread, so a
blocking tool cannot stall the server. With no provider involved, nothing leaves the machine:
the trust zone is ``local``. Every direct call, refused or not, is kept in the audit store as
a one-step run (provider ``direct call``), filtered by the store's privacy level.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
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
from toolwire.loop import LoopResult, RunOptions, TerminationReason, ToolLoop
from toolwire.messages import ChatMessage, ToolCall
from toolwire.providers.base import CompletionRequest, CompletionResponse, Usage
from toolwire.providers.scripted import ScriptedProvider
from toolwire.result import ToolResult
from toolwire.runtime import RunOutcome, RunRequest, RunStatus, Runtime
from toolwire.tools.api import ToolContext
from toolwire.tools.policy import Grant, TrustZone
from toolwire.tools.registry import ToolState
from toolwire.trace import RunTrace, ToolInvocation

log = logging.getLogger("toolwire.inspector")
DIRECT_CALL = "direct call"  # the provider label of a direct call's stored run


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

    name = DIRECT_CALL

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        raise RuntimeError("a direct tool call has no model")


async def invoke_tool(
    settings: InspectorSettings, runtime: Runtime, name: str, body: InvokeBody
) -> InvokeResult:
    context = ToolContext(user=settings.user, workspace=settings.workspace)
    decision = runtime.policy.decide(name, context=context, grant=Grant(), zone=TrustZone.LOCAL)
    call = ToolCall.of(f"direct_{uuid.uuid4().hex[:12]}", name, body.arguments)
    if not decision.allowed:
        refused = Refused(reason=str(decision.reason), detail=decision.detail)
        text = f'Error: tool "{name}" not permitted ({decision.reason})'
        run_id = _audit(settings, call, ToolResult.error(text), None, 0.0)
        return InvokeResult(
            tool=name, content=None, is_error=True, artifacts=[], refused=refused, duration_ms=0,
            run_id=run_id,
        )  # fmt: skip
    loop = ToolLoop(_NoModel(), settings.registry, policy=runtime.policy)
    started = time.perf_counter()
    result, original = await asyncio.to_thread(
        asyncio.run, loop.invoke(call, frozenset({name}), context)
    )
    elapsed = (time.perf_counter() - started) * 1000
    return InvokeResult(
        tool=name,
        content=result.content,
        is_error=result.is_error,
        artifacts=[a.to_dict() for a in result.artifacts],
        duration_ms=round(elapsed, 2),
        original_bytes=original,
        run_id=_audit(settings, call, result, original, elapsed),
    )


def _audit(
    settings: InspectorSettings,
    call: ToolCall,
    result: ToolResult,
    original: int | None,
    elapsed_ms: float,
) -> str | None:
    """Keep a direct call in the store as a one-step run, like any run (privacy-filtered).

    An operator's call is as much an access to the data as a model's; it must not escape the
    audit. A store failure is logged and leaves the call's answer as it is.
    """
    store = settings.store
    if store is None:
        return None
    request = RunRequest(
        messages=(ChatMessage.user(f"direct call of {call.name}"),),
        provider=_NoModel(),
        context=ToolContext(user=settings.user, workspace=settings.workspace),
    )
    invocation = ToolInvocation(
        name=call.name,
        arguments=call.decoded_arguments(),
        result=result.content,
        is_error=result.is_error,
        artifacts=result.artifacts,
        call_id=call.id,
    )
    trace = RunTrace()
    step = trace.record_tool(0, elapsed_ms, invocation, original)
    loop_result = LoopResult(
        final_content=result.content, trace=(invocation,), iterations=0, truncated=False,
        reason=TerminationReason.COMPLETED, usage=Usage(),
    )  # fmt: skip
    outcome = RunOutcome(
        run_id="", status=RunStatus.COMPLETED, result=loop_result, steps=(step,),
        wall_ms=elapsed_ms,
    )  # fmt: skip
    try:
        run_id = store.begin(request)
        store.record_step(run_id, 1, step)
        store.settle(dataclasses.replace(outcome, run_id=run_id))
    except Exception:
        log.exception("a direct call of %r could not be stored", call.name)
        return None
    return run_id
