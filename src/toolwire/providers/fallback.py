"""Provider fallback: an ordered chain of providers, each behind a circuit breaker.

A request goes to the first provider of the chain whose circuit lets it through. A failure of
the kind the HTTP layer retries (``ProviderError.retryable`` of its class: a connection error,
429, 5xx or an overloaded server, a timeout) moves it on to the next provider; any other
failure (a bad request, refused credentials, a malformed answer) ends the chain with that
error, since another provider would be asked the same thing. The HTTP layer has already
retried the same endpoint as far as it may; a connection refused on a loopback address, which
it does not retry there, still moves on here: another endpoint is another server.

Invariants:
- A streamed attempt that already showed part of its answer is never asked again elsewhere:
  its failure ends the chain, as the HTTP layer ends a stream that already delivered events.
- Each failed attempt goes to the request's ``on_failure`` as it fails (the loop records it as
  a step), naming the provider and the error (bounded and redacted where it was raised); the
  answer names the provider that gave it (``CompletionResponse.provider``).
- Provider state (thinking signatures, thought signatures, reasoning) goes back only to the
  endpoint that wrote it: each adapter already replays only its own family's state, and the
  chain tags each answer's state with a digest of its endpoint and strips another endpoint's
  before a request goes out, so two servers of one family never see each other's state. The
  tag stays out of every wire body (an adapter reads only its own keys of the state).
- The chain's trust zone is the least trusted zone of its providers
  (:meth:`TrustZone.least_trusted`): a run is offered only what every provider it may reach
  may see, and that zone is what its charter seals.
- Circuits (:class:`Circuits`) are per endpoint, the provider's name and base URL: one opens
  after ``failures`` consecutive failures that move the chain on, lets one trial request
  through once ``cooldown`` seconds have passed (half-open), and closes on a success; a
  failed trial opens it again. A refusal (bad request, credentials) says the endpoint answered:
  it changes no count. With every circuit open, the call fails at once with ``CircuitOpen``.
  A chain has its own circuits unless it is given some; the chains a process builds from runs'
  charters (``provider_from_ref``: a server's, a worker's, a resumed run's) share
  ``PROCESS_CIRCUITS``, so an endpoint that fails keeps resting across runs.
- ``repr`` and every error name providers, never a key or a base URL.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

from toolwire.core import egress
from toolwire.core.errors import CircuitOpen, ConfigError, ProviderError
from toolwire.core.messages import ChatMessage, ProviderState
from toolwire.core.reprs import count, ident, tagged
from toolwire.core.trust import TrustZone
from toolwire.providers.base import (
    CompletionRequest,
    CompletionResponse,
    Delta,
    FailedAttempt,
    Provider,
    checked_provider,
    new_request,
)

__all__ = ["DEFAULT_COOLDOWN_SECONDS", "DEFAULT_FAILURES", "PROCESS_CIRCUITS", "Circuit",
           "Circuits", "FallbackProvider", "chain_of", "endpoint_of", "falls_through"]  # fmt: skip

DEFAULT_FAILURES = 3  # consecutive failures that open an endpoint's circuit
DEFAULT_COOLDOWN_SECONDS = 30.0  # how long an open circuit rests before a trial request
ENDPOINT_TAG = "_endpoint"  # the key of provider state that names the endpoint that wrote it
_TAG_CHARS = 16
Clock = Callable[[], float]


def falls_through(error: ProviderError) -> bool:
    """Whether ``error`` moves a chain on to its next provider: its class is one the HTTP layer
    retries. (An instance may say it is not worth retrying at the same endpoint, as a loopback
    connection refused does; another endpoint is still worth asking.)"""
    return type(error).retryable


def endpoint_of(provider: Provider) -> str:
    """The endpoint a circuit is kept for: the provider's name and base URL (when it has one)."""
    base_url = getattr(provider, "base_url", None)
    return f"{provider.name} {base_url}" if isinstance(base_url, str) else provider.name


class Circuit:
    """One endpoint's breaker: closed, open (resting) or half-open (one trial let through)."""

    def __init__(self, failures: int, cooldown: float, clock: Clock) -> None:
        self._threshold = failures
        self._cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()  # runs on several event loops may share a chain
        self._failures = 0
        self._opened_at: float | None = None
        self._trial = False  # a half-open circuit's one request is in flight

    @property
    def state(self) -> str:
        """``closed``, ``open`` or ``half_open``, as of now."""
        with self._lock:
            return self._state()

    def _state(self) -> str:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at < self._cooldown:
            return "open"
        return "half_open"

    def resting(self) -> bool:
        """Whether a request would be turned away now (without taking a half-open trial)."""
        with self._lock:
            state = self._state()
            return state == "open" or (state == "half_open" and self._trial)

    def acquire(self) -> bool:
        """Whether a request may go to the endpoint now; a half-open circuit lets one through."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return True
            if state == "open" or self._trial:
                return False
            self._trial = True
            return True

    def succeeded(self) -> None:
        with self._lock:
            self._failures, self._opened_at, self._trial = 0, None, False

    def failed(self) -> None:
        with self._lock:
            self._failures += 1
            if self._trial or self._failures >= self._threshold:
                self._opened_at = self._clock()
            self._trial = False

    def released(self) -> None:
        """The request ended without saying whether the endpoint works (a refusal, a cancel)."""
        with self._lock:
            self._trial = False

    def retry_in(self) -> float:
        """Seconds until an open circuit lets a trial through (0 when it would now)."""
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self._cooldown - (self._clock() - self._opened_at))

    def __repr__(self) -> str:
        return tagged("Circuit", state=self.state, failures=self._failures)


class Circuits:
    """The circuits of endpoints, one per endpoint; share one between chains to share them."""

    def __init__(
        self,
        *,
        failures: int = DEFAULT_FAILURES,
        cooldown: float = DEFAULT_COOLDOWN_SECONDS,
        clock: Clock = time.monotonic,
    ) -> None:
        if failures < 1:
            raise ConfigError("a circuit must open after at least 1 failure")
        if not cooldown >= 0:
            raise ConfigError("a circuit's cooldown must be 0 or more seconds")
        self.failures = failures
        self.cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._circuits: dict[str, Circuit] = {}

    def of(self, endpoint: str) -> Circuit:
        with self._lock:
            circuit = self._circuits.get(endpoint)
            if circuit is None:
                circuit = Circuit(self.failures, self.cooldown, self._clock)
                self._circuits[endpoint] = circuit
            return circuit

    def __repr__(self) -> str:
        return tagged("Circuits", endpoints=len(self._circuits), failures=self.failures,
                      cooldown=self.cooldown)  # fmt: skip


class _Member:
    """A provider of the chain, its circuit and the tag of the state it writes."""

    __slots__ = ("circuit", "provider", "tag")

    def __init__(self, provider: Provider, circuit: Circuit, endpoint: str) -> None:
        self.provider = provider
        self.circuit = circuit
        self.tag = hashlib.sha256(endpoint.encode()).hexdigest()[:_TAG_CHARS]


class FallbackProvider:
    """A provider over an ordered chain of providers: the first one that can answers.

    ``providers``: the chain, first choice first (at least one; a chain given as a member is
    flattened into this one). ``circuits``: the breakers of its endpoints (by default its own,
    opening after ``DEFAULT_FAILURES`` consecutive failures and resting
    ``DEFAULT_COOLDOWN_SECONDS``). Its name, model and address are its first provider's.
    """

    reports_failures = True  # the loop hands each request an ``on_failure`` sink

    def __init__(self, providers: Iterable[Provider], *, circuits: Circuits | None = None) -> None:
        chain: list[Provider] = []
        for provider in providers:
            inner = getattr(provider, "members", None)
            if isinstance(provider, FallbackProvider) and isinstance(inner, tuple):
                chain.extend(inner)
            else:
                chain.append(checked_provider(provider))
        if not chain:
            raise ConfigError("a fallback chain needs at least one provider")
        self.circuits = circuits or Circuits()
        self.members: tuple[Provider, ...] = tuple(chain)
        self._chain = tuple(_Member(p, self.circuits.of(endpoint_of(p)), endpoint_of(p))
                            for p in chain)  # fmt: skip
        self._zone = TrustZone.least_trusted(p.trust_zone for p in chain)

    @property
    def primary(self) -> Provider:
        return self.members[0]

    @property
    def name(self) -> str:
        return self.primary.name

    @property
    def trust_zone(self) -> TrustZone:
        """The least trusted zone of the chain: every provider in it may be sent the run."""
        return self._zone

    def __getattr__(self, name: str) -> Any:
        """The first provider's model, base URL, price table, context window, script and
        output-cap field: what labels and prices the run unless another provider answers."""
        if name in _PRIMARY_FACTS:
            return getattr(self.members[0], name, None)
        raise AttributeError(name)

    def member(self, name: str | None) -> Provider | None:
        """The chain's first provider called ``name``, if any."""
        return next((p for p in self.members if p.name == name), None)

    def session(self) -> AbstractAsyncContextManager[object]:
        return self._sessions()

    @asynccontextmanager
    async def _sessions(self) -> Any:
        async with AsyncExitStack() as stack:
            for provider in self.members:
                await stack.enter_async_context(provider.session())
            yield None

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """The first answer of the chain; see the module's invariants."""
        last: ProviderError | None = None
        chain = self._chain
        for index, member in enumerate(chain):
            circuit = member.circuit
            if not circuit.acquire():
                continue
            provider = member.provider
            outgoing = egress.current()
            if outgoing is not None:  # what this attempt sends is counted as this provider's
                outgoing.to(provider.name)
            shown = _Shown(request.on_delta)
            sent = self._request_for(member, request, shown)
            started = time.perf_counter()
            try:
                response = await provider.complete(sent)
            except ProviderError as exc:
                moves_on = falls_through(exc) and not shown.count
                (circuit.failed if falls_through(exc) else circuit.released)()
                after = self._next(index) if moves_on else None
                if request.on_failure is not None:
                    elapsed = (time.perf_counter() - started) * 1000
                    request.on_failure(FailedAttempt(provider=provider.name, error=exc,
                                                     duration_ms=elapsed,
                                                     next=after))  # fmt: skip
                if not moves_on:
                    raise
                last = exc
                continue
            except BaseException:
                circuit.released()
                raise
            circuit.succeeded()
            return _answered(member, response)
        if last is not None:
            raise last
        raise self._all_open()

    def _next(self, index: int) -> str | None:
        """The provider after ``index`` that a request would reach now, if any."""
        for member in self._chain[index + 1 :]:
            if not member.circuit.resting():
                return member.provider.name
        return None

    def _request_for(
        self, member: _Member, request: CompletionRequest, shown: _Shown
    ) -> CompletionRequest:
        """``request`` as ``member`` gets it: no other endpoint's state; deltas counted; no
        failure sink (the chain reports its members' failures itself). Built field by field
        (``new_request``): every call of a chain makes one."""
        messages = request.messages
        if any(m.provider_state is not None for m in messages):
            messages = tuple(_own_state(m, member.tag) for m in messages)
        sink = shown if request.on_delta is not None else None
        return new_request(messages, request.tools, request.tool_choice, request.temperature,
                           request.max_tokens, request.reasoning, request.capture_raw,
                           request.stream, sink, request.dropped_turns, request.output,
                           request.output_forced, None)  # fmt: skip

    def _all_open(self) -> CircuitOpen:
        wait = min(member.circuit.retry_in() for member in self._chain)
        names = ", ".join(member.provider.name for member in self._chain)
        return CircuitOpen(
            f"every provider of the fallback chain is resting after repeated failures "
            f"({names}); the first is tried again in {wait:.0f}s"
        )

    def __repr__(self) -> str:
        return tagged("FallbackProvider", providers=count(self.members),
                      names=ident(",".join(p.name for p in self.members)),
                      trust_zone=self._zone)  # fmt: skip


_PRIMARY_FACTS = frozenset(
    {"model", "base_url", "pricing_family", "context_window", "script_path", "max_tokens_field"}
)


class _Shown:
    """The request's delta sink, counting what this attempt has shown."""

    __slots__ = ("count", "sink")

    def __init__(self, sink: Callable[[Delta], None] | None) -> None:
        self.sink = sink
        self.count = 0

    def __call__(self, delta: Delta) -> None:
        self.count += 1
        if self.sink is not None:
            self.sink(delta)


def _own_state(message: ChatMessage, tag: str) -> ChatMessage:
    """``message`` without provider state another endpoint of the chain wrote."""
    state = message.provider_state
    if state is None or not isinstance(state.data, dict):
        return message
    written = state.data.get(ENDPOINT_TAG)
    if written is None or written == tag:
        return message
    return ChatMessage(message.role, message.content, message.tool_calls, message.tool_call_id,
                       message.is_error, None)  # fmt: skip


def _answered(member: _Member, response: CompletionResponse) -> CompletionResponse:
    """``response`` naming the provider that gave it, its state tagged with its endpoint.
    Built field by field rather than with ``dataclasses.replace``: every answer makes one."""
    state = response.provider_state
    if state is not None and isinstance(state.data, dict):
        state = ProviderState(state.provider, {**state.data, ENDPOINT_TAG: member.tag})
    r = response
    return CompletionResponse(content=r.content, tool_calls=r.tool_calls, usage=r.usage,
                              stop=r.stop, finish_reason=r.finish_reason, refusal=r.refusal,
                              thinking=r.thinking, model=r.model, provider_state=state,
                              raw=r.raw, response_id=r.response_id,
                              provider=member.provider.name)  # fmt: skip


# The circuits of the chains this process builds from runs' charters (a server's, a worker's
# runs): one breaker per endpoint for all of them, not one per run.
PROCESS_CIRCUITS = Circuits()


def chain_of(
    provider: Provider, fallback: Sequence[Provider], *, circuits: Circuits | None = None
) -> Provider:
    """``provider`` with ``fallback`` after it, as one chain; ``provider`` itself when there is
    no fallback."""
    if not fallback:
        return provider
    return FallbackProvider((provider, *fallback), circuits=circuits)
