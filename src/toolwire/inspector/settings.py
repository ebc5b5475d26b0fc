"""What an inspector app is built from: tools, an optional store, providers, the acting user.

The app holds no global state: everything it touches comes in through ``InspectorSettings``.
The token is the admin credential; whoever holds it acts as ``user`` (an admin by default).
A provider is chosen per run through ``provider_factory``, which raises ``ConfigError`` for a
choice it cannot serve; the API turns that into a 422 with the error's (safe) message.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from toolwire.core.errors import ConfigError
from toolwire.core.sealing import StateKey
from toolwire.policy.charter import Charter
from toolwire.providers.base import Provider
from toolwire.providers.scripted import ScriptedProvider
from toolwire.providers.select import create_provider
from toolwire.providers.wire import checked_base_url
from toolwire.runs.recorder import RunRecorder
from toolwire.tools.api import User
from toolwire.tools.registry import Availability, ToolRegistry

if TYPE_CHECKING:
    from toolwire.loop.governance import Gate

ProviderFactory = Callable[[str, "str | None"], Provider]
TOKEN_BYTES = 32  # 256 bits from secrets: not guessable, short enough to paste


class InspectorStore(RunRecorder, Protocol):
    """The audit store as the inspector uses it (``toolwire.store.RunStore``)."""

    def request_cancel(self, run_id: str) -> bool: ...
    def list_runs(
        self, *, limit: int = 50, offset: int = 0, waiting: bool = False
    ) -> list[Any]: ...
    def get_run(self, run_id: str) -> Any | None: ...
    def charter_of(self, run_id: str) -> Charter | None: ...
    def find_runs(self, query: Any, *, total: bool = True) -> Any: ...
    def neighbours(self, query: Any, run_id: str) -> Any | None: ...
    def facets(self) -> dict[str, list[str]]: ...
    def egress(
        self,
        *,
        run_id: str | None = None,
        by: Sequence[Any] = ...,
        since: Any = None,
        until: Any = None,
    ) -> list[Any]: ...
    def first_requests(self, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]: ...
    def progress(self, run_id: str, after: int = 0) -> Any | None: ...
    def load_availability(self) -> Availability: ...
    def set_tool_state(self, name: str, enabled: bool | None) -> None: ...
    def set_group_state(self, name: str, enabled: bool | None) -> None: ...
    def list_gate_decisions(
        self,
        *,
        since: datetime | None = None,
        gate: Gate | None = None,
        tool: str | None = None,
        reason: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Any]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RunDefaults:
    """What the run form starts with."""

    prompt: str = field(default="", repr=False)
    provider: str = "scripted"
    model: str = ""
    reasoning: str | int | None = None  # low, medium, high or a token budget
    stream: bool = True
    max_tokens: int | None = None
    max_total_tokens: int | None = None
    max_cost: float | None = None
    context_window: int | None = None
    max_concurrency: int | None = None
    tool_choice: str = "auto"
    base_url: str | None = None


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


@dataclass(frozen=True, slots=True, kw_only=True)
class InspectorSettings:
    """Everything ``create_app`` needs. ``privacy_level`` names how the store keeps steps.

    ``state_key`` seals the state of a run that waits for approval or input; the same key must
    be given to any process that resumes it."""

    registry: ToolRegistry
    provider_factory: ProviderFactory
    token: str = field(default_factory=new_token, repr=False)  # the admin credential
    store: InspectorStore | None = None
    privacy_level: str | None = None
    workspace: Any = None
    user: User = field(default_factory=lambda: User("admin", is_admin=True))
    replay_label: str = "Replay: scripted model, no provider is called"
    defaults: RunDefaults = field(default_factory=RunDefaults)
    state_key: StateKey | None = None  # seals suspended runs; without it no run can wait
    allow_remote: bool = False  # answer to any Host name, not only loopback ones
    queue_runs: bool = False  # queue new runs for workers (a PostgreSQL store; serve --queue)

    def __post_init__(self) -> None:
        if len(self.token) < 16:  # a short token could be guessed over loopback
            raise ConfigError("the inspector token must be at least 16 characters")


def scripted_factory(script: Path | None) -> ProviderFactory:
    """A factory that knows only ``scripted``, replaying ``script`` (read once, up front)."""
    provider = ScriptedProvider.from_file(script) if script is not None else None

    def factory(name: str, model: str | None) -> Provider:
        if name != "scripted":
            raise ConfigError(f'unknown provider "{name}"; this server offers: scripted')
        if provider is None:
            raise ConfigError("no script was given: start the server with --script FILE")
        return provider

    return factory


@runtime_checkable
class AddressedFactory(Protocol):
    """A provider factory that can also reach a server at a base URL the run form gave."""

    def __call__(self, name: str, model: str | None) -> Provider: ...

    def at(self, name: str, model: str | None, base_url: str) -> Provider: ...


@dataclass(frozen=True, slots=True)
class ServedProviders:
    """``scripted`` replays the script; any other name is a real adapter, keyed from the
    environment. A missing key or model is a ``ConfigError`` before any request.

    ``at`` serves a base URL the run form gave (checked by ``checked_base_url``: http(s), a
    host, no query or fragment). An environment key goes only to the base URL it was set up
    for (the preset's, or the server's ``--base-url``): a URL from the form gets no key, so a
    hosted API behind one is refused, and a page can never send the server's key elsewhere.
    Bedrock signs with the AWS credentials of the server's process, which no ``environ`` holds
    back: it is refused at any URL from the form but the server's own.
    """

    scripted: ProviderFactory
    base_url: str | None = None
    trust_zone: str | None = None
    region: str | None = None  # Bedrock's AWS region (else AWS_REGION or the profile's)

    def __call__(self, name: str, model: str | None) -> Provider:
        if name == "scripted":
            return self.scripted(name, model)
        return create_provider(name, model=model, base_url=self.base_url,
                               trust_zone=self.trust_zone, region=self.region)  # fmt: skip

    def at(self, name: str, model: str | None, base_url: str) -> Provider:
        if name == "scripted":
            raise ConfigError("base_url: the scripted provider calls no server")
        url = checked_base_url(name, base_url)
        if url == (self.base_url or "").rstrip("/"):
            return self(name, model)
        if name == "bedrock":  # its signature carries the server's credentials
            raise ConfigError("base_url: bedrock signs with this server's AWS credentials, so it "
                              "calls only the server's own endpoint")  # fmt: skip
        return create_provider(name, model=model, base_url=url, trust_zone=self.trust_zone,
                               environ={})  # fmt: skip


def provider_factory(
    script: Path | None,
    *,
    base_url: str | None = None,
    trust_zone: str | None = None,
    region: str | None = None,
) -> ServedProviders:
    """The served providers (see ``ServedProviders``)."""
    return ServedProviders(scripted_factory(script), base_url=base_url, trust_zone=trust_zone,
                           region=region)  # fmt: skip
