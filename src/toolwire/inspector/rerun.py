"""Re-running a stored run: the run form's fields, rebuilt from what the store holds.

A run can be started again with the same request, provider and options when its request is
available: kept verbatim (privacy level ``full``: its first request step holds the messages),
or sealed for resume (a waiting run: its state holds them, opened with this server's state
key). A redacted request is not the request: it is never offered for a re-run. The options
come from the run's stored options (metadata, kept at every level; runs stored before options
were kept re-run with the form's defaults, and say so). The new run records ``rerun_of`` and
acts under the stored run's charter (its user, workspace, level and zone); a run without one
to trust (stored before charters, or changed since) is not offered for a re-run.

The form holds a system prompt and one prompt; a request of any other shape is not offered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from toolwire.core.errors import ConfigError, RunNotWaiting, StateError, StoreError
from toolwire.core.lifecycle import WAITING, as_strings
from toolwire.inspector.models import RerunTemplate
from toolwire.inspector.settings import InspectorSettings
from toolwire.policy.charter import Charter
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import DIRECT_CALL, Runtime

# RunBody fields copied from a stored run's options, by the option's stored name.
_COPIED = (
    "max_rounds", "allowed_tools", "temperature", "capture_raw", "dry_run", "stream",
    "max_tokens", "max_total_tokens", "max_cost", "context_window", "max_concurrency",
    "max_remote_calls", "max_egress_bytes", "on_egress_limit", "trust_zone", "tool_choice",
)  # fmt: skip
Source = Literal["stored", "sealed"]
NO_CHARTER = (
    "it has no charter (it was stored before runs kept one), so who it acted for, on which "
    "workspace and at which level is not known"
)


def rerun_charter(settings: InspectorSettings, run_id: str) -> Charter:
    """The charter a re-run of ``run_id`` acts under (its user, workspace, level and zone);
    ``ValueError`` saying why there is none to trust."""
    if settings.store is None:
        raise ValueError("this server keeps no runs")
    try:
        charter = settings.store.charter_of(run_id)
    except StoreError as exc:
        raise ValueError(str(exc)) from None
    if charter is None:
        raise ValueError(NO_CHARTER)
    return charter


def template(settings: InspectorSettings, runtime: Runtime, stored: Any) -> RerunTemplate:
    """The form for re-running ``stored`` (a ``StoredRun``), or why it cannot be re-run."""
    base = {"run_id": stored.id, "provider": stored.provider or "", "model": stored.model}
    if stored.provider == DIRECT_CALL:
        return RerunTemplate(**base, available=False, reason="a direct tool call has no prompt")
    try:
        charter = rerun_charter(settings, stored.id)
    except ValueError as exc:
        return RerunTemplate(**base, available=False, reason=str(exc))
    base["provider"] = charter.provider.served_name  # what the run form's Provider names
    found = _messages(settings, runtime, stored)
    if found[0] is None:
        return RerunTemplate(**base, available=False, reason=found[1])
    messages, source = found
    shape = _form_shape(messages)
    if isinstance(shape, str):
        return RerunTemplate(**base, available=False, reason=shape)
    system, prompt = shape
    options = _options(stored.options)
    return RerunTemplate(
        **base, available=True, source=source, prompt=prompt, system_prompt=system,
        options=options, options_recorded=stored.options is not None,
        provider_problem=_provider_problem(settings, base["provider"], stored.model),
    )  # fmt: skip


def _messages(
    settings: InspectorSettings, runtime: Runtime, stored: Any
) -> tuple[list[dict[str, Any]], Source] | tuple[None, str]:
    """The run's first request as plain messages and where they came from; or None and why."""
    if stored.status in as_strings(WAITING) and settings.state_key is not None:
        try:
            state = runtime.suspended(stored.id)
        except (RunNotWaiting, StateError):
            pass  # it stopped waiting meanwhile, or this server cannot open it: as stored
        else:
            return [m.to_dict() for m in _initial(state.messages)], "sealed"
    if stored.privacy_level != PrivacyLevel.FULL:
        return None, (
            f"its request is not kept at privacy level {stored.privacy_level} "
            "(only at full, or sealed while the run waits)"
        )
    request = next((s for s in stored.steps if s.get("kind") == "request"), None)
    messages = request.get("messages_sent") if request else None
    if not isinstance(messages, list):
        return None, "the run has no stored request"
    return messages, "stored"


def _initial(messages: Sequence[Any]) -> list[Any]:
    """The messages before the model's first turn: the request the run began with."""
    first: list[Any] = []
    for message in messages:
        if message.role == "assistant":
            break
        first.append(message)
    return first


def _form_shape(messages: list[Any]) -> tuple[str | None, str] | str:
    """``(system prompt, prompt)`` when the request is at most a system message and one user
    message of plain text; otherwise why the form cannot hold it."""
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages]
    if roles not in (["user"], ["system", "user"]):
        return f"its request is a conversation of {len(messages)} messages, not one prompt"
    contents = [m.get("content") for m in messages]
    if not all(isinstance(c, str) for c in contents):
        return "its request is not plain text"
    return (contents[0] if len(contents) == 2 else None), contents[-1]


def _options(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The RunBody fields of a run's stored options (none when they were not recorded)."""
    if stored is None:
        return {}
    fields = {name: stored[name] for name in _COPIED if stored.get(name) is not None}
    reasoning = stored.get("reasoning")
    if isinstance(reasoning, list) and len(reasoning) == 2:
        effort, budget = reasoning
        fields["reasoning"] = budget if isinstance(budget, int) else effort
    return fields


def _provider_problem(settings: InspectorSettings, name: str | None, model: str | None) -> str:
    """Why this server cannot start the run's provider, or '' when it can."""
    try:
        settings.provider_factory(name or "scripted", model)
    except ConfigError as exc:
        return str(exc)
    return ""
