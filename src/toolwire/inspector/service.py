"""What the API does, apart from HTTP: prepare runs, list and toggle tools, call one tool.

A direct tool call goes through the same gate (``ToolPolicy.decide``) and the same seam
(``ToolLoop.invoke``: offered-set check, execution with every exception caught, both channels
bounded) as a call a model makes; it only skips the model. It runs in a worker thread, so a
blocking tool cannot stall the server. With no provider involved, nothing leaves the machine:
the trust zone is ``local``. Every direct call, refused or not, is kept in the audit store as
a one-step run (provider ``direct call``), filtered by the store's privacy level.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from toolwire.core.errors import (
    ConfigError,
    DecisionError,
    InvalidInput,
    RunNotWaiting,
    StaleDecision,
    StateError,
    StateKeyMissing,
)
from toolwire.core.messages import ChatMessage, ToolCall
from toolwire.core.trust import TrustZone
from toolwire.inspector.errors import ApiError
from toolwire.inspector.models import (
    DecisionBody,
    GateResult,
    GroupRow,
    InvokeBody,
    InvokeResult,
    Refused,
    RunBody,
    ToolRow,
    ToolsList,
    Verdict,
)
from toolwire.inspector.rerun import rerun_charter
from toolwire.inspector.settings import AddressedFactory, InspectorSettings
from toolwire.loop.loop import RunOptions
from toolwire.loop.state import Pause
from toolwire.policy.charter import Charter, CharterRefused
from toolwire.policy.charter import context as tool_context
from toolwire.policy.options import DEFAULT_MAX_CONCURRENCY
from toolwire.providers.base import TOOL_CHOICE_MODES, Provider, Reasoning
from toolwire.providers.scripted import ScriptedProvider
from toolwire.runs.runtime import (
    DIRECT_CALL,
    DirectCall,
    OperatorDecision,
    ProviderRef,
    RunOutcome,
    RunRequest,
    Runtime,
)
from toolwire.tools.api import ToolContext, needs_approval
from toolwire.tools.policy import Decision, Grant
from toolwire.tools.registry import ToolState

log = logging.getLogger("toolwire.inspector")
Event = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveRun:
    """A request ready to run, with its context event (the run id is filled in at start)."""

    request: RunRequest
    context: Event


def prepare_run(settings: InspectorSettings, runtime: Runtime, body: RunBody) -> LiveRun:
    """The run ``body`` asks for, or a 422 naming the choice that cannot be served."""
    provider = _provider(settings, body.provider, body.model, body.base_url)
    chosen = _zone(body.trust_zone) if body.trust_zone is not None else None
    options = _options(body, chosen)
    charter = _rerun_charter(settings, body.rerun_of)
    if charter is None:
        context, privacy = ToolContext(user=settings.user, workspace=settings.workspace), None
    else:  # a re-run acts for the run's user, on its workspace, at its level
        context, privacy = _charter_context(charter, settings), charter.privacy
        if chosen is None:
            chosen = charter.trust_zone
            options = dataclasses.replace(options, trust_zone=chosen)
    messages = ([ChatMessage.system(body.system_prompt)] if body.system_prompt else []) + [
        ChatMessage.user(body.prompt)
    ]
    zone = chosen or TrustZone.parse(provider.trust_zone)
    offered, _ = runtime.policy.offered(
        body.allowed_tools, context=context, grant=options.grant, zone=zone
    )
    if options.tool_choice not in TOOL_CHOICE_MODES and options.tool_choice not in offered:
        raise ApiError(422, f"tool_choice: {options.tool_choice!r} is not a tool this run offers")
    request = RunRequest(
        messages=tuple(messages), provider=provider, model=body.model, options=options,
        context=context, rerun_of=body.rerun_of, privacy=privacy,
    )  # fmt: skip
    replay = settings.replay_label if isinstance(provider, ScriptedProvider) else None
    event = {
        "type": "context",
        "provider": provider.name,
        "model": body.model,
        "replay_label": replay,
        "tools": offered,
        "trust_zone": str(zone),
        "privacy_level": privacy or settings.privacy_level,
        "stored": settings.store is not None,
        "dry_run": body.dry_run,
        "rerun_of": body.rerun_of,
    }
    return LiveRun(request=request, context=event)


def _options(body: RunBody, chosen: TrustZone | None) -> RunOptions:
    """The run's options, or a 422 naming the one that cannot be used."""
    try:
        return RunOptions(
            max_rounds=body.max_rounds,
            allowed_tools=body.allowed_tools,
            temperature=body.temperature,
            capture_raw=body.capture_raw,
            dry_run=body.dry_run,
            reasoning=reasoning_of(body),
            stream=body.stream,
            max_tokens=body.max_tokens,
            max_total_tokens=body.max_total_tokens,
            max_cost=body.max_cost,
            context_window=body.context_window,
            max_concurrency=body.max_concurrency or DEFAULT_MAX_CONCURRENCY,
            max_remote_calls=body.max_remote_calls,
            max_egress_bytes=body.max_egress_bytes,
            on_egress_limit=body.on_egress_limit,
            trust_zone=chosen,
            tool_choice=body.tool_choice,
        )
    except ValueError as exc:
        raise ApiError(422, str(exc)) from None


def _rerun_charter(settings: InspectorSettings, rerun_of: str | None) -> Charter | None:
    """The charter of the run a re-run starts again (None: not a re-run); a 422 when it has
    none to trust."""
    if rerun_of is None:
        return None
    try:
        return rerun_charter(settings, rerun_of)
    except ValueError as exc:
        raise ApiError(422, f"rerun_of: the run cannot be re-run: {exc}") from None


def _charter_context(charter: Charter, settings: InspectorSettings) -> ToolContext:
    try:
        return tool_context(charter, lent=settings.workspace)
    except CharterRefused as exc:
        raise ApiError(422, f"the run cannot be re-run here: {exc}") from None


def _provider(
    settings: InspectorSettings, name: str, model: str | None, base_url: str | None = None
) -> Provider:
    factory = settings.provider_factory
    if base_url is not None and not isinstance(factory, AddressedFactory):
        raise ApiError(422, "base_url: this server's providers take no base URL")
    try:
        if base_url is not None and isinstance(factory, AddressedFactory):
            return factory.at(name, model, base_url)
        return factory(name, model)
    except ConfigError as exc:
        raise ApiError(422, str(exc)) from None


def _zone(name: str) -> TrustZone:
    try:
        return TrustZone.parse(name)
    except ConfigError as exc:
        raise ApiError(422, str(exc)) from None


def gate_verdicts(
    settings: InspectorSettings,
    runtime: Runtime,
    provider: str,
    model: str | None,
    trust_zone: str | None,
) -> GateResult:
    """The gate's verdict on every registered tool for a run with this provider and zone.

    A chosen zone needs no provider; otherwise the provider's own zone decides (422 when the
    provider cannot be served here)."""
    if trust_zone is not None:
        zone = _zone(trust_zone)
    else:
        zone = TrustZone.parse(_provider(settings, provider, model).trust_zone)
    context = ToolContext(user=settings.user, workspace=settings.workspace)
    names = settings.registry.names()
    offered, refused = runtime.policy.offered(names, context=context, grant=Grant(), zone=zone)
    refusals = {d.name: d for d in refused}
    verdicts = [_verdict(n, refusals.get(n)) for n in names if n in offered or n in refusals]
    return GateResult(provider=provider, trust_zone=str(zone), tools=verdicts)


def _verdict(name: str, refusal: Decision | None) -> Verdict:
    if refusal is None:
        return Verdict(tool=name, allowed=True, reason="allowed")
    return Verdict(tool=name, allowed=False, reason=str(refusal.reason), detail=refusal.detail)


def replay_label(settings: InspectorSettings) -> str | None:
    """The replay banner's text when the run form's default provider replays a script."""
    try:
        provider = settings.provider_factory(settings.defaults.provider, None)
    except ConfigError:
        return None
    return settings.replay_label if isinstance(provider, ScriptedProvider) else None


def reasoning_of(body: RunBody) -> Reasoning | None:
    """The body's reasoning: an effort level, or a budget in tokens."""
    if body.reasoning is None:
        return None
    if isinstance(body.reasoning, int):
        return Reasoning(budget_tokens=body.reasoning)
    return Reasoning(effort=body.reasoning)


def list_tools(settings: InspectorSettings) -> ToolsList:
    registry = settings.registry
    rows = [
        ToolRow(**_state_fields(s), why=_why(s), parameters=_parameters(settings, s.name))
        for s in registry.states()
    ]
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


def _parameters(settings: InspectorSettings, name: str) -> dict[str, Any]:
    tool = settings.registry.get(name)
    return dict(tool.spec.parameters) if tool is not None else {}


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


async def invoke_tool(
    settings: InspectorSettings, runtime: Runtime, name: str, body: InvokeBody
) -> InvokeResult:
    """One call through the gate and the seam, recorded as a one-step run."""
    context = ToolContext(user=settings.user, workspace=settings.workspace)
    decision = runtime.policy.decide(name, context=context, grant=Grant(), zone=TrustZone.LOCAL)
    tool = settings.registry.get(name)
    refused: Refused | None = None
    if not decision.allowed:
        refused = Refused(reason=str(decision.reason), detail=decision.detail)
    elif tool is not None and needs_approval(tool):
        # A direct call has nobody to ask: a write goes through a run, where it is approved.
        refused = Refused(reason="requires_approval", detail="approve it in a run")
    call = ToolCall.of(f"direct_{uuid.uuid4().hex[:12]}", name, body.arguments)
    offered = frozenset() if refused else frozenset({name})
    outcome = await runtime.call(call, context=context, offered=offered)
    step = next((s for s in outcome.steps if s.kind == "tool"), None)
    result = outcome.result
    if refused is not None or step is None or result is None:
        return InvokeResult(
            tool=name, content=None, is_error=True, artifacts=[], refused=refused, duration_ms=0,
            run_id=_stored_id(settings, outcome),
        )  # fmt: skip
    return InvokeResult(
        tool=name,
        content=step.tool_result,
        is_error=bool(step.tool_is_error),
        artifacts=[a.to_dict() for a in step.tool_artifacts or ()],
        duration_ms=round(step.duration_ms, 2),
        original_bytes=step.tool_result_bytes,
        run_id=_stored_id(settings, outcome),
    )


def _stored_id(settings: InspectorSettings, outcome: RunOutcome) -> str | None:
    """The run that audits the call, when a store kept it."""
    if settings.store is None or outcome.store_error is not None:
        return None
    return outcome.run_id


def decision_of(settings: InspectorSettings, body: DecisionBody) -> OperatorDecision:
    """The operator's decision as the runtime takes it: the operator is the server's user,
    recorded on the decision step; the run goes on acting for its own (its charter's)."""
    return OperatorDecision(
        action=body.action, digest=body.digest, actor=settings.user.name, reason=body.reason,
        values=body.values, admin=settings.user.is_admin,
    )  # fmt: skip


def lent(settings: InspectorSettings) -> ToolContext:
    """What this server lends a run it carries on: its workspace (with its connections), used
    only when it is the run's own; never its user."""
    return ToolContext(workspace=settings.workspace)


def provider_of(settings: InspectorSettings, ref: ProviderRef) -> Provider:
    """A resumed run's provider: the one this server offers under the stored name. A run
    replayed from a script file is labelled with the script's name but resumes as scripted;
    a held direct call (see ``toolwire.runs.held``) has no model."""
    if ref.name == DIRECT_CALL:
        return DirectCall()
    try:
        return settings.provider_factory(ref.served_name, ref.model)
    except ConfigError as exc:
        raise ApiError(422, f"the run's provider is not available here: {exc}") from None


def resume_context(
    settings: InspectorSettings, runtime: Runtime, run_id: str
) -> tuple[Event, Provider]:
    """The context line of a resumed segment and its provider (404: the run is not waiting)."""
    waiting = runtime.recorder.waiting(run_id)
    if waiting is None:
        raise ApiError(404, "no waiting run has this id")
    try:
        charter = runtime.charter_of(run_id)
    except (DecisionError, StateError) as exc:
        raise refusal(exc) from None
    provider = provider_of(settings, charter.provider)
    scripted = isinstance(provider, ScriptedProvider)
    event = {
        "type": "context",
        "provider": charter.provider.name,
        "model": charter.provider.model,
        "replay_label": settings.replay_label if scripted else None,
        "trust_zone": str(charter.trust_zone),
        "privacy_level": str(charter.privacy),
        "stored": settings.store is not None,
        "resumed": True,
    }
    return event, provider


def audit(
    settings: InspectorSettings,
    *,
    since: str | None,
    gate: str | None,
    tool: str | None,
    reason: str | None,
    run_id: str | None,
    limit: int,
    offset: int,
) -> dict[str, Any]:
    """The governance log as the API lists it; a ``since`` it cannot read is a 422, a
    ``gate`` that is none of the gates a 400 naming them."""
    from toolwire.core.moments import parse_moment
    from toolwire.loop.governance import Gate

    if gate is not None and gate not in set(Gate):
        raise ApiError(400, f"gate: {gate[:40]!r} is not a gate; choose one of {', '.join(Gate)}")
    if settings.store is None:
        return {"decisions": [], "stored": False}
    try:
        moment = None if since is None else parse_moment(since)
    except ValueError as exc:
        raise ApiError(422, f"since: {exc}") from None
    found = settings.store.list_gate_decisions(
        since=moment, gate=None if gate is None else Gate(gate), tool=tool, reason=reason,
        run_id=run_id, limit=limit, offset=offset,
    )  # fmt: skip
    return {"decisions": [record.to_dict() for record in found], "stored": True}


def pending(runtime: Runtime, run_id: str) -> Pause:
    """What a waiting run waits on, or the refusal for it."""
    try:
        return runtime.pending(run_id)
    except (RunNotWaiting, StateError) as exc:
        raise refusal(exc) from None


def refusal(exc: Exception) -> ApiError:
    """The API error for a decision the runtime refused before anything ran."""
    if isinstance(exc, RunNotWaiting):
        return ApiError(404, str(exc))
    if isinstance(exc, StaleDecision):
        return ApiError(409, str(exc), code="stale_decision")
    if isinstance(exc, InvalidInput):
        return ApiError(422, str(exc))
    if isinstance(exc, StateKeyMissing):
        return ApiError(409, f"this server cannot open suspended runs: {exc}", code="state_key")
    if isinstance(exc, StateError):
        return ApiError(409, f"the run's suspended state cannot be read: {exc}", code="state")
    if isinstance(exc, ConfigError):
        return ApiError(422, str(exc))
    if isinstance(exc, DecisionError):  # any other refusal of a decision, e.g. a queued run's
        return ApiError(409, str(exc))
    log.error("a decision failed before the run resumed", exc_info=exc)
    return ApiError(500, "the decision could not be applied; see the server log")
