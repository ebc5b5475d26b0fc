"""One run as values: what it asks, how it ended, a person's decision on it, and its provider.

The run's identity and policy (who it acts for, where, at which privacy level) is its
:class:`~toolwire.policy.charter.Charter`, fixed when the request is submitted.

These are what the runtime, the store, the queue and telemetry pass between them. None holds a
key, and each ``repr`` shows counts and names, never a prompt, an input or an artifact. A run's
provider is named by a :class:`ProviderRef` so another process can reach it again
(:func:`provider_from_ref`), keyed from that process's environment, never from the store. A
direct tool call's run has no provider: :class:`DirectCall` stands in for one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

from toolwire.core.lifecycle import RunStatus
from toolwire.core.messages import ChatMessage
from toolwire.core.reprs import count, ident, shape, size, tagged
from toolwire.core.trust import TrustZone
from toolwire.loop.endings import LoopResult
from toolwire.loop.state import Pause
from toolwire.policy.charter import Charter, ProviderRef, submit
from toolwire.policy.options import RunOptions
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.trace import RunStep
from toolwire.providers.base import (
    CompletionRequest,
    CompletionResponse,
    Provider,
    checked_provider,
    no_session,
)
from toolwire.providers.fallback import PROCESS_CIRCUITS, chain_of
from toolwire.providers.presets import MaxTokensField
from toolwire.tools.api import ToolContext

DIRECT_CALL = "direct call"  # the provider label of a direct tool call's run


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequest:
    """Everything one run needs. ``model`` labels the run; the provider already knows it."""

    messages: tuple[ChatMessage, ...]
    provider: Provider
    model: str | None = None
    options: RunOptions = field(default_factory=RunOptions)
    context: ToolContext = field(default_factory=ToolContext)
    rerun_of: str | None = None  # the stored run this one starts again, when it does
    privacy: PrivacyLevel | None = None  # None: the level of the store that records it
    # Fixed when the run is submitted (see toolwire.policy.charter); the runtime sets it.
    charter: Charter | None = None

    def __post_init__(self) -> None:
        checked_provider(self.provider)  # what it lacks, said here rather than mid-run
        if self.options.fallback:  # one chain from here on: its charter names every provider
            chained = chain_of(self.provider, self.options.fallback)
            object.__setattr__(self, "provider", chained)
            object.__setattr__(self, "options", dataclasses.replace(self.options, fallback=()))

    @classmethod
    def of(
        cls,
        prompt: str,
        *,
        provider: Provider,
        system: str | None = None,
        model: str | None = None,
        options: RunOptions | None = None,
        context: ToolContext | None = None,
        privacy: PrivacyLevel | None = None,
    ) -> RunRequest:
        """A request from a prompt and an optional system prompt."""
        messages = ([ChatMessage.system(system)] if system else []) + [ChatMessage.user(prompt)]
        return cls(
            messages=tuple(messages),
            provider=provider,
            model=model,
            options=options or RunOptions(),
            context=context or ToolContext(),
            privacy=privacy,
        )

    @property
    def provider_ref(self) -> ProviderRef:
        if self.charter is not None:
            return self.charter.provider
        return ProviderRef.of(self.provider, self.model, self.options)

    def chartered(self, privacy: PrivacyLevel, servers: Iterable[str] | None = None) -> RunRequest:
        """This request with its charter: as given, or made now at ``privacy`` (the request's
        own level when it names one), with ``servers`` the MCP servers in its scope. A run
        given no name takes its workspace's."""
        if self.charter is not None:
            return self
        options = self.options
        named = getattr(self.context.workspace, "name", None)
        if options.name is None and isinstance(named, str):  # the workspace names its runs
            options = dataclasses.replace(options, name=named)
        charter = submit(
            provider=self.provider_ref,
            options=options,
            privacy=self.privacy or privacy,
            user=self.context.user,
            workspace=self.context.workspace,
            servers=servers,
        )
        return dataclasses.replace(self, options=options, charter=charter)

    def __repr__(self) -> str:
        """Counts and names; no prompt, and nothing of the workspace (it may hold secrets)."""
        user = self.context.user
        return tagged(
            "RunRequest",
            messages=count(self.messages),
            provider=ident(getattr(self.provider, "name", None)),
            model=ident(self.model),
            max_rounds=self.options.max_rounds,
            user=None if user is None else ident(user.name),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorDecision:
    """A person's answer to a waiting run. ``digest`` names the turn it was made on."""

    action: Literal["approve", "deny", "input"]
    digest: str
    actor: str  # the operator: recorded on the decision step, never the run's acting user
    reason: str | None = None
    values: Mapping[str, Any] | None = None  # the input, for ``input``; never recorded
    admin: bool = True  # an operator who is not an admin decides only runs acting for them

    def __repr__(self) -> str:
        return tagged(
            "OperatorDecision",
            action=ident(self.action),
            digest=ident(self.digest),
            actor=ident(self.actor),
            reason_bytes=size(self.reason),
            values=None if self.values is None else shape(self.values),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOutcome:
    """How a run (or a segment of it) ended. ``error`` is a short, safe text."""

    run_id: str
    status: RunStatus
    result: LoopResult | None
    steps: tuple[RunStep, ...]
    wall_ms: float
    error: str | None = None
    store_error: str | None = None

    @property
    def truncated(self) -> bool:
        return self.result is not None and self.result.truncated

    def __repr__(self) -> str:
        """Status, result and counts; the steps themselves are for the trace's sinks."""
        return tagged(
            "RunOutcome",
            run_id=ident(self.run_id),
            status=self.status,
            result=self.result,
            steps=len(self.steps),
            wall_ms=round(self.wall_ms, 2),
            error=ident(self.error),
            store_error=ident(self.store_error),
        )

    @property
    def pause(self) -> Pause | None:
        """What a waiting run waits on (its calls, previews and digest)."""
        state = None if self.result is None else self.result.suspended
        return None if state is None or not self.status.waiting else state.pause


ProviderFactory = Callable[[ProviderRef], Provider]


def provider_from_ref(ref: ProviderRef) -> Provider:
    """The provider ``ref`` names, keyed from the environment (never from the store)."""
    from pathlib import Path

    from toolwire.providers.select import create_provider

    provider = create_provider(
        ref.served_name,  # a script's own name labels runs, not adapters
        model=ref.model,
        base_url=ref.base_url,
        trust_zone=ref.trust_zone,
        script=Path(ref.script) if ref.script else None,
        max_tokens_field=_cap_field(ref.max_tokens_field),
    )
    others = [provider_from_ref(other) for other in ref.fallback]
    return chain_of(provider, others, circuits=PROCESS_CIRCUITS)  # a breaker across runs


def _cap_field(value: str | None) -> MaxTokensField | None:
    """A stored output-cap field name, if it is one the adapter knows."""
    fields: dict[str | None, MaxTokensField] = {
        "max_tokens": "max_tokens",
        "max_completion_tokens": "max_completion_tokens",
    }
    return fields.get(value)


class DirectCall:
    """The provider of a direct tool call: there is none, and asking for one is a bug."""

    name = DIRECT_CALL
    trust_zone = TrustZone.LOCAL  # nothing leaves the machine

    def session(self) -> AbstractAsyncContextManager[None]:
        return no_session()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        raise RuntimeError("a direct tool call has no model")
