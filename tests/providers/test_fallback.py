"""Provider fallback over real HTTP on loopback: a chain moves on past an unreachable or failing
server, stops at a refusal, keeps a circuit per endpoint, runs in its least trusted zone,
records every attempt, never hands one endpoint's state to another, and never shows a key."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from toolwire import (
    BaseProvider,
    ChatMessage,
    RunOptions,
    ScriptedProvider,
    ToolCall,
    ToolLoop,
    ToolRegistry,
    tool,
)
from toolwire.core.errors import (
    AuthenticationError,
    CircuitOpen,
    ConfigError,
    ProviderConnectionError,
    ProviderError,
    ServerError,
)
from toolwire.core.lifecycle import RunStatus
from toolwire.core.messages import ProviderState
from toolwire.core.output import OutputSchema
from toolwire.core.sealing import StateKey
from toolwire.core.trust import TrustZone
from toolwire.policy.charter import Charter
from toolwire.policy.trace import ERROR_CHARS, FailedStep, LlmStep, RequestStep, RunTrace
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.base import (
    CompletionRequest,
    CompletionResponse,
    FailedAttempt,
    Provider,
    Reasoning,
    Stop,
    Usage,
)
from toolwire.providers.fallback import (
    PROCESS_CIRCUITS,
    Circuit,
    Circuits,
    FallbackProvider,
    falls_through,
)
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.scripted import ScriptedCall, Turn
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime, provider_from_ref
from toolwire.store import RunStore

from ..fakes import plugin
from .servers import KEY, FakeModel, ModelServer, _serving, no_sleep

OTHER_SECRET = "sk-proj-Q8fLz1Yk2Wm3Xn4Vb5Tc6Rd7"  # a key's shape the server echoes, not ours
QUIET = HttpSettings(sleep=no_sleep, timeout=10, max_attempts=1)  # one request per call


# -- a loopback server that fails as it is told ------------------------------------------------


@dataclass(slots=True)
class Endpoint:
    """A model server: each request takes the next planned answer (an HTTP status to fail
    with, a raw body to answer, or None: the scripted model's answer); past the plan, the
    model answers. Every request body is kept."""

    plan: list[int | dict[str, Any] | None] = field(default_factory=list)
    model: FakeModel = field(default_factory=lambda: FakeModel(turns=["done"]))
    bodies: list[dict[str, Any]] = field(default_factory=list)
    connections: int = 0

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        self.bodies.append(json.loads(body))
        planned = self.plan.pop(0) if self.plan else None
        if isinstance(planned, int):
            said = f"overloaded, key {KEY} rejected, {OTHER_SECRET} too"
            error = {"error": {"message": said, "type": "api_error"}}
            return planned, json.dumps(error).encode()
        if isinstance(planned, dict):
            return 200, json.dumps(planned).encode()
        return 200, self.model.answer(path, headers, body)


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        endpoint: Endpoint = self.server.model  # type: ignore[assignment]
        status, out = endpoint.respond(self.path, dict(self.headers), body)
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def serving(endpoint: Endpoint) -> Iterator[str]:
    server = ModelServer(("127.0.0.1", 0), _Handler)
    server.model = endpoint  # type: ignore[assignment]
    with _serving(server) as url:
        yield url


def refused_url() -> str:
    """A loopback address nothing listens on: connecting to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def openai_at(url: str, *, name: str | None = None, zone: str = "local") -> OpenAIProvider:
    return OpenAIProvider(model="gpt-test", api_key=KEY, base_url=f"{url}/v1", http=QUIET,
                          trust_zone=zone, name=name)  # fmt: skip


def anthropic_at(url: str, *, zone: str = "local") -> AnthropicProvider:
    return AnthropicProvider(model="claude-test", api_key=KEY, base_url=url, http=QUIET,
                             trust_zone=zone)  # fmt: skip


def ask(provider: Provider, text: str = "hi") -> CompletionResponse:
    request = CompletionRequest(messages=(ChatMessage.user(text),))
    return asyncio.run(provider.complete(request))


def run(provider: Provider, registry: ToolRegistry | None = None) -> tuple[Any, RunTrace]:
    trace = RunTrace()
    loop = ToolLoop(provider, registry or ToolRegistry())
    result = loop.run_sync([ChatMessage.user("hi")], trace=trace, options=RunOptions(stream=False))
    return result, trace


# -- falling through, and not -------------------------------------------------------------------


def test_a_503_moves_the_run_on_to_the_next_provider_which_answers() -> None:
    first, second = Endpoint(plan=[503]), Endpoint()
    with serving(first) as a, serving(second) as b:
        chain = FallbackProvider([openai_at(a), anthropic_at(b)])
        result, trace = run(chain)
    assert result.final_content == "done"
    assert len(first.bodies) == 1 and len(second.bodies) == 1
    failed, answered = trace.of_kind(FailedStep), trace.of_kind(LlmStep)
    assert [(f.provider, f.error_class, f.error_status, f.next_provider) for f in failed] == [
        ("openai", "ServerError", 503, "anthropic")
    ]
    assert "HTTP 503 server error" in failed[0].error
    assert [a.provider for a in answered] == ["anthropic"]
    kinds = [step.kind for step in trace.steps]
    assert kinds == ["request", "provider_failed", "llm"]


def test_a_refused_connection_moves_the_run_on_to_the_next_provider() -> None:
    second = Endpoint()
    with serving(second) as b:
        chain = FallbackProvider([openai_at(refused_url(), name="primary"), openai_at(b)])
        result, trace = run(chain)
    assert result.final_content == "done"
    failed = trace.of_kind(FailedStep)
    assert [(f.provider, f.error_class, f.next_provider) for f in failed] == [
        ("primary", "ProviderConnectionError", "openai")
    ]
    assert "connection refused" in failed[0].error
    assert trace.of_kind(LlmStep)[0].provider == "openai"


@pytest.mark.parametrize(("status", "kind"), [(400, ProviderError), (401, AuthenticationError)])
def test_a_refusal_ends_the_chain_with_its_error(status: int, kind: type[ProviderError]) -> None:
    first, second = Endpoint(plan=[status]), Endpoint()
    trace = RunTrace()
    with serving(first) as a, serving(second) as b:
        chain = FallbackProvider([openai_at(a), anthropic_at(b)])
        with pytest.raises(kind) as raised:
            ToolLoop(chain, ToolRegistry()).run_sync([ChatMessage.user("hi")], trace=trace)
    assert type(raised.value) is kind and raised.value.status == status
    assert second.bodies == []  # never asked: it would be asked the same thing
    failed = trace.of_kind(FailedStep)
    assert [(f.provider, f.error_status, f.next_provider) for f in failed] == [
        ("openai", status, None)
    ]
    assert chain.circuits.of(f"openai {a}/v1").state == "closed"  # the endpoint answered


def test_when_every_provider_fails_the_last_error_ends_the_run() -> None:
    first, second = Endpoint(plan=[503]), Endpoint(plan=[429])
    with serving(first) as a, serving(second) as b:
        chain = FallbackProvider([openai_at(a), anthropic_at(b)])
        trace = RunTrace()
        with pytest.raises(ProviderError) as raised:
            ToolLoop(chain, ToolRegistry()).run_sync([ChatMessage.user("hi")], trace=trace)
    assert raised.value.status == 429
    failed = trace.of_kind(FailedStep)
    assert [(f.provider, f.next_provider) for f in failed] == [
        ("openai", "anthropic"), ("anthropic", None)
    ]  # fmt: skip


class _BreaksMidStream(BaseHTTPRequestHandler):
    """Streams the start of an answer, then an error event: a server failing mid-answer."""

    server: ModelServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        endpoint: Endpoint = self.server.model  # type: ignore[assignment]
        endpoint.bodies.append({})
        head = {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test"}
        events = [head | {"choices": [{"index": 0, "delta": {"role": "assistant",
                                                             "content": "Half an ans"}}]},
                  {"error": {"message": "overloaded", "type": "server_error"}}]  # fmt: skip
        out = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.mark.parametrize("watched", [True, False])
def test_a_stream_that_showed_part_of_its_answer_is_not_asked_again_elsewhere(
    watched: bool,
) -> None:
    """Watched, the half answer was shown: the run fails with the error rather than showing
    another answer after it. Unwatched, nothing was shown, and the next provider answers."""
    first, second = Endpoint(), Endpoint()
    server = ModelServer(("127.0.0.1", 0), _BreaksMidStream)
    server.model = first  # type: ignore[assignment]
    pieces: list[str] = []
    trace = RunTrace(delta_observers=[lambda _, d: pieces.append(d.text)] if watched else ())
    with _serving(server) as a, serving(second) as b:
        loop = ToolLoop(FallbackProvider([openai_at(a), openai_at(b, name="backup")]),
                        ToolRegistry())  # fmt: skip

        def go() -> Any:
            return loop.run_sync([ChatMessage.user("hi")], trace=trace)

        if watched:
            with pytest.raises(ServerError):
                go()
        else:
            assert go().final_content == "done"
    failed = trace.of_kind(FailedStep)
    assert [f.next_provider for f in failed] == [None if watched else "backup"]
    assert len(second.bodies) == (0 if watched else 1)
    assert pieces == (["Half an ans"] if watched else [])


# -- the circuit of each endpoint ---------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_circuit_opens_after_three_failures_rests_then_lets_one_trial_through() -> None:
    clock = Clock()
    circuits = Circuits(clock=clock)  # the defaults: 3 failures, 30 s
    first = Endpoint(plan=[503, 503, 503, 503])
    second = Endpoint(model=FakeModel(turns=["second"] * 10))
    with serving(first) as a, serving(second) as b:
        chain = FallbackProvider([openai_at(a), openai_at(b, name="backup")], circuits=circuits)
        circuit = circuits.of(f"openai {a}/v1")
        for _ in range(3):
            assert ask(chain).content == "second"
        assert circuit.state == "open" and len(first.bodies) == 3
        assert ask(chain).provider == "backup"
        assert len(first.bodies) == 3  # resting: not asked at all
        clock.now += 29.9
        ask(chain)
        assert len(first.bodies) == 3 and circuit.state == "open"
        clock.now += 0.1
        assert circuit.state == "half_open"
        ask(chain)  # the trial fails (its fourth 503): open again, for another 30 s
        assert len(first.bodies) == 4 and circuit.state == "open"
        clock.now += 30
        answer = ask(chain)  # the next trial succeeds: closed
        assert (answer.provider, answer.content) == ("openai", "done")
        assert circuit.state == "closed" and len(first.bodies) == 5
        assert ask(chain).provider == "openai"


def test_a_success_resets_the_count_of_consecutive_failures() -> None:
    circuits = Circuits(failures=2, clock=Clock())
    first = Endpoint(plan=[503, None, 503])
    with serving(first) as a, serving(Endpoint()) as b:
        chain = FallbackProvider([openai_at(a), anthropic_at(b)], circuits=circuits)
        for _ in range(3):
            ask(chain)
        assert circuits.of(f"openai {a}/v1").state == "closed"  # 503, answer, 503: one in a row


def test_with_every_circuit_open_a_call_fails_at_once() -> None:
    circuits = Circuits(failures=1, cooldown=60, clock=Clock())
    first, second = Endpoint(plan=[503]), Endpoint(plan=[503])
    with serving(first) as a, serving(second) as b:
        chain = FallbackProvider([openai_at(a), anthropic_at(b)], circuits=circuits)
        with pytest.raises(ServerError):
            ask(chain)
        with pytest.raises(CircuitOpen) as raised:
            ask(chain)
    assert len(first.bodies) == 1 and len(second.bodies) == 1  # nobody asked the second time
    assert "openai, anthropic" in str(raised.value) and "60s" in str(raised.value)


def test_circuits_are_per_endpoint_and_shared_between_chains() -> None:
    circuits = Circuits(failures=1, clock=Clock())
    first = Endpoint(plan=[503])
    with serving(first) as a, serving(Endpoint(model=FakeModel(turns=["b"] * 3))) as b:
        one = FallbackProvider([openai_at(a), anthropic_at(b)], circuits=circuits)
        other = FallbackProvider([openai_at(a), anthropic_at(b)], circuits=circuits)
        assert ask(one).content == "b"
        assert ask(other).content == "b" and len(first.bodies) == 1  # the same endpoint rests
        assert circuits.of(f"openai {b}/v1").state == "closed"  # another address: its own


# -- the trust zone is the least trusted one ------------------------------------------------------


@tool(group="records", data_class="public")
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(group="system", data_class="secret_adjacent")
def host_secrets() -> str:
    """What only a model on this machine may read."""
    return "the host's secrets"


def secrets_model() -> ScriptedProvider:
    """A local model that asks for ``host_secrets``, then answers."""
    turns = [Turn(tool_calls=[ScriptedCall(name="host_secrets", arguments={})]),
             Turn(content="done")]  # fmt: skip
    return ScriptedProvider(turns, name="local model", trust_zone="local")


def scripted(content: str, zone: str) -> ScriptedProvider:
    return ScriptedProvider([Turn(content=content)], name=f"model {content}", trust_zone=zone)


def test_a_chains_zone_is_its_least_trusted_providers() -> None:
    local, eu = scripted("a", "local"), scripted("b", "external_eu")
    hosted = scripted("c", "private_hosted")
    assert FallbackProvider([local, hosted]).trust_zone is TrustZone.PRIVATE_HOSTED
    assert FallbackProvider([eu, local, hosted]).trust_zone is TrustZone.EXTERNAL_EU
    assert TrustZone.least_trusted([]) is TrustZone.EXTERNAL_GLOBAL


@pytest.mark.parametrize("given", [None, "local"])
def test_a_tool_for_the_local_zone_is_not_offered_when_any_provider_is_external(
    given: str | None,
) -> None:
    """Whether the chain is passed whole or as ``RunOptions.fallback``, and whatever zone the
    options name: the run's charter seals the least trusted zone, and the gate offers only
    what that zone may see."""
    registry = ToolRegistry([weather, host_secrets])
    second = Endpoint()
    with serving(second) as b:
        local = secrets_model()
        external = openai_at(b, zone="external_global")
        for request in (
            RunRequest.of("hi", provider=FallbackProvider([local, external]),
                          options=RunOptions(trust_zone=given)),
            RunRequest.of("hi", provider=local,
                          options=RunOptions(trust_zone=given, fallback=(external,))),
        ):  # fmt: skip
            outcome = Runtime(registry).run_sync(request)
            assert outcome.status is RunStatus.COMPLETED
            first = outcome.steps[0]
            assert isinstance(first, RequestStep) and first.tool_specs == ("weather",)
            assert outcome.result is not None
            assert outcome.result.trace[0].result.startswith("Error")  # not offered
    alone = Runtime(registry).run_sync(RunRequest.of("hi", provider=secrets_model()))
    first = alone.steps[0]
    assert isinstance(first, RequestStep) and set(first.tool_specs) == {"weather", "host_secrets"}


def test_the_charter_seals_the_chain_and_its_zone_and_rebuilds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    chain = FallbackProvider([openai_at("http://127.0.0.1:9", zone="local"),
                              openai_at("http://127.0.0.1:8", zone="external_eu")])  # fmt: skip
    request = RunRequest.of("hi", provider=chain).chartered(Runtime(ToolRegistry()).privacy)
    charter = request.charter
    assert charter is not None and charter.trust_zone is TrustZone.EXTERNAL_EU
    sealed = json.loads(charter.to_json())
    assert KEY not in charter.to_json()
    assert [ref["base_url"] for ref in sealed["provider"]["fallback"]] == ["http://127.0.0.1:8/v1"]
    again = Charter.from_dict(sealed)
    assert again == charter
    rebuilt = provider_from_ref(again.provider)
    assert isinstance(rebuilt, FallbackProvider)
    assert [getattr(p, "base_url", None) for p in rebuilt.members] == [
        "http://127.0.0.1:9/v1", "http://127.0.0.1:8/v1"
    ]  # fmt: skip
    assert rebuilt.trust_zone is TrustZone.EXTERNAL_EU
    again_rebuilt = provider_from_ref(again.provider)  # another run of this process
    assert isinstance(again_rebuilt, FallbackProvider)
    assert again_rebuilt.circuits is rebuilt.circuits is PROCESS_CIRCUITS  # breakers across runs
    assert FallbackProvider(rebuilt.members).circuits is not PROCESS_CIRCUITS  # one's own
    answering = ScriptedProvider.from_turns([{"content": "a"}])
    plain = RunRequest.of("hi", provider=answering).chartered(charter.privacy)
    assert plain.charter is not None
    assert "fallback" not in json.loads(plain.charter.to_json())["provider"]


@tool(group="records", data_class="public", requires_approval=True)
def book(city: str) -> str:
    """Book a trip to a city."""
    return f"booked {city}"


def test_a_waiting_run_resumes_on_its_chain_rebuilt_from_its_charter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resumed segment gets no provider from its caller: the charter's chain is built
    again (keys from this process's environment), and it falls back again."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    script = tmp_path / "booking.yaml"
    script.write_text("name: booking\nturns:\n"
                      "  - tool_calls: [{name: book, arguments: {city: Oslo}}]\n"
                      "  - content: Booked.\n")  # fmt: skip
    down = openai_at(refused_url())
    chain = FallbackProvider([down, ScriptedProvider.from_file(script)])
    runtime = Runtime(ToolRegistry([book]), state_key=StateKey.generate())
    waiting = runtime.run_sync(RunRequest.of("book it", provider=chain))
    assert waiting.status is RunStatus.AWAITING_APPROVAL and waiting.pause is not None
    charter = runtime.charter_of(waiting.run_id)
    assert [ref.name for ref in charter.provider.fallback] == ["booking"]
    assert charter.trust_zone is TrustZone.LOCAL
    decision = OperatorDecision(action="approve", digest=waiting.pause.digest, actor="ops")
    resumed = runtime.resume_sync(waiting.run_id, decision)
    assert resumed.status is RunStatus.COMPLETED and resumed.result is not None
    assert resumed.result.final_content == "Booked."
    failed = [s for s in resumed.steps if isinstance(s, FailedStep)]
    assert [(f.provider, f.next_provider) for f in failed] == [("openai", "booking")]


def test_a_segment_carried_on_by_fewer_providers_is_offered_no_more_than_its_charter_allows() -> (
    None
):
    """Resumed with only the chain's local provider lent, the run is still gated by the zone
    its charter sealed: a later segment may reach the external one again."""
    turns = [Turn(tool_calls=[ScriptedCall(name="book", arguments={"city": "Oslo"})]),
             Turn(tool_calls=[ScriptedCall(name="host_secrets", arguments={})]),
             Turn(content="done")]  # fmt: skip
    local = ScriptedProvider(turns, name="local model", trust_zone="local")
    with serving(Endpoint()) as b:
        chain = FallbackProvider([local, openai_at(b, zone="external_global")])
        runtime = Runtime(ToolRegistry([book, host_secrets]), state_key=StateKey.generate())
        waiting = runtime.run_sync(RunRequest.of("book it", provider=chain))
    assert waiting.pause is not None
    decision = OperatorDecision(action="approve", digest=waiting.pause.digest, actor="ops")
    resumed = runtime.resume_sync(waiting.run_id, decision, provider=local)
    assert resumed.status is RunStatus.COMPLETED and resumed.result is not None
    requests = [s for s in resumed.steps if isinstance(s, RequestStep)]
    assert requests and all(s.tool_specs == ("book",) for s in requests)
    secrets = [s for s in resumed.steps if getattr(s, "tool_name", None) == "host_secrets"]
    assert secrets and secrets[0].tool_result.startswith("Error")  # type: ignore[union-attr]


# -- provider state stays with the endpoint that wrote it ----------------------------------------


def thinking_turn(signature: str) -> dict[str, Any]:
    """An Anthropic answer that thinks (signed) and calls ``weather``."""
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "thinking", "thinking": "Look it up.", "signature": signature},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
        ],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 7},
    }  # fmt: skip


@pytest.mark.parametrize("family", ["anthropic", "openai"])
def test_state_written_by_one_endpoint_never_reaches_another(family: str) -> None:
    """Round 1 thinks at the first endpoint; round 2 fails there and goes to the second, of
    the same family or another: its request holds the call and its result, not the thinking."""
    first = Endpoint(plan=[thinking_turn("sig-first-endpoint"), 503])
    second = Endpoint(model=FakeModel(turns=["", "sunny"]))  # round 2 is its second turn
    with serving(first) as a, serving(second) as b:
        other = anthropic_at(b) if family == "anthropic" else openai_at(b)
        result, trace = run(FallbackProvider([anthropic_at(a), other]),
                            ToolRegistry([weather]))  # fmt: skip
    assert result.final_content == "sunny"
    own_replay = json.dumps(first.bodies[1])  # round 2 at the first endpoint: its own state
    assert "sig-first-endpoint" in own_replay and "_endpoint" not in own_replay
    elsewhere = json.dumps(second.bodies[0])
    assert "sig-first-endpoint" not in elsewhere and "Look it up." not in elsewhere
    assert "toolu_1" in elsewhere and "sunny in Oslo" in elsewhere
    assert [s.provider for s in trace.of_kind(LlmStep)] == ["anthropic", family]


# -- recorded steps, and keys ---------------------------------------------------------------------


def test_each_attempt_is_a_stored_step_and_no_key_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first, second = Endpoint(plan=[503]), Endpoint()
    with serving(first) as a, serving(second) as b:
        chain = FallbackProvider([openai_at(a, name="primary"), openai_at(b)])
        store = RunStore(f"sqlite:///{db}")
        outcome = Runtime(ToolRegistry(), recorder=store).run_sync(
            RunRequest.of("hi", provider=chain, options=RunOptions(stream=False))
        )
        stored = store.get_run(outcome.run_id)
        store.close()
    assert stored is not None and outcome.status is RunStatus.COMPLETED
    kinds = [(s["kind"], s.get("provider")) for s in stored.steps]
    assert kinds == [("request", None), ("provider_failed", "primary"), ("llm", "openai")]
    failed = stored.steps[1]
    assert failed["error_class"] == "ServerError" and failed["next_provider"] == "openai"
    assert "HTTP 503" in failed["error"] and KEY not in failed["error"]
    for path in tmp_path.iterdir():
        assert KEY.encode() not in path.read_bytes()
        assert OTHER_SECRET.encode() not in path.read_bytes()


def test_no_error_repr_or_step_of_a_chain_shows_a_key() -> None:
    first, second = Endpoint(plan=[503]), Endpoint(plan=[401])
    trace = RunTrace()
    with serving(first) as a, serving(second) as b:
        chain = FallbackProvider([openai_at(a), anthropic_at(b)])
        with pytest.raises(AuthenticationError) as raised:
            ToolLoop(chain, ToolRegistry()).run_sync([ChatMessage.user("hi")], trace=trace)
    texts = [
        str(raised.value),
        repr(raised.value),
        repr(chain),
        repr(chain.circuits),
        *(repr(step) for step in trace.steps),
        *(str(step.to_dict()) for step in trace.steps),
    ]
    assert len(trace.of_kind(FailedStep)) == 2
    for text in texts:
        assert KEY not in text and OTHER_SECRET not in text, text
    assert a not in repr(chain)  # names, never addresses


def test_an_empty_chain_and_a_non_provider_are_refused_when_built() -> None:
    with pytest.raises(ConfigError) as empty:
        FallbackProvider([])
    assert "at least one provider" in str(empty.value)
    with pytest.raises(TypeError, match="is not a provider"):
        FallbackProvider([object()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="is not a provider"):
        RunOptions(fallback=(object(),))  # type: ignore[arg-type]


def test_a_chain_in_a_chain_is_one_chain() -> None:
    a, b, c = (scripted(x, "local") for x in "abc")
    inner = FallbackProvider([b, c])
    assert FallbackProvider([a, inner]).members == (a, b, c)


def test_the_class_of_an_error_decides_whether_the_chain_moves_on() -> None:
    """A connection refused on loopback is not retried at its own endpoint (nothing listens),
    yet it moves a chain on: the class says it is worth another server."""
    error = ProviderConnectionError("x")
    error.retryable = False
    assert falls_through(error) and not falls_through(ProviderError("bad request"))


# -- the command line ----------------------------------------------------------------------------

runner = CliRunner(env={"COLUMNS": "200"})
SECRETS_PLUGIN = """
    from toolwire import tool

    @tool(group="plugin", data_class="public")
    def greet(name: str) -> str:
        return f"hello {name}"

    @tool(group="plugin", data_class="secret_adjacent")
    def host_secrets() -> str:
        return "the host's secrets"

    def all_tools():
        return [greet, host_secrets]
"""
SCRIPT = """
name: local model
turns:
  - tool_calls:
      - {name: host_secrets, arguments: {}}
  - content: "finished"
"""


def cli_run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    import toolwire.cli.run  # noqa: F401  (registers the commands)
    from toolwire.cli.app import app

    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    tools = ["--tool", "greet", "--tool", "host_secrets"]
    return runner.invoke(app, ["run", "--script", str(script), *tools, "--no-store", *args, "q"],
                         env=env)  # fmt: skip


def test_the_cli_offers_a_local_tool_only_when_no_provider_of_the_chain_is_external(
    tmp_path: Path, on_path: Path
) -> None:
    plugin(on_path, SECRETS_PLUGIN, "all = twplugin:all_tools")
    alone = cli_run(tmp_path)
    assert alone.exit_code == 0, alone.output
    assert alone.output.splitlines()[0] == "[round 1] → request: 1 messages, 2 tools"
    assert "tool host_secrets ok" in alone.output
    chained = cli_run(tmp_path, "--fallback", "openrouter:some/model",
                      env={"OPENROUTER_API_KEY": KEY})  # fmt: skip
    assert chained.exit_code == 0, chained.output
    lines = chained.output.splitlines()
    assert lines[0] == "[round 1] → request: 1 messages, 1 tools"
    assert "tool host_secrets error" in chained.output and "the host's secrets" not in lines[3]
    assert KEY not in chained.output


def test_the_cli_falls_back_when_the_first_provider_is_unreachable(
    tmp_path: Path, on_path: Path
) -> None:
    plugin(on_path, SECRETS_PLUGIN, "all = twplugin:all_tools")
    done = cli_run(tmp_path, "--provider", "openai", "--base-url", refused_url() + "/v1",
                   "--model", "gpt-test", "--trust-zone", "local", "--fallback", "scripted",
                   env={"OPENAI_API_KEY": KEY})  # fmt: skip
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[1] == (
        "[round 1] ✗ provider openai failed (ProviderConnectionError); trying local model"
    )
    assert lines[2].startswith("[round 1] ← model [local model] calls host_secrets (")
    assert "tool host_secrets ok" in done.output  # both providers are local
    assert lines[-1].startswith("completed")
    assert KEY not in done.output


@pytest.mark.parametrize(
    ("value", "said"),
    [("nosuch", "unknown provider 'nosuch'"), ("openai:", "a model name after the colon"),
     ("openai,,groq", "one is empty")],
)  # fmt: skip
def test_a_bad_fallback_is_a_usage_error(tmp_path: Path, value: str, said: str) -> None:
    result = cli_run(tmp_path, "--fallback", value)
    assert result.exit_code == 2
    assert said in result.output and "Traceback" not in result.output


def test_a_stored_failed_attempt_reads_as_the_live_one() -> None:
    from toolwire.cli.queued import stored_step_line
    from toolwire.cli.show import step_line

    step = FailedStep(round=2, provider="openai", error_class="ServerError", error="HTTP 503",
                      error_status=503, next_provider="anthropic")  # fmt: skip
    line = "[round 2] ✗ provider openai failed (ServerError); trying anthropic"
    assert step_line(step).plain == stored_step_line(step.to_dict()).plain == line
    last = step._replace(next_provider=None)
    assert step_line(last).plain == "[round 2] ✗ provider openai failed (ServerError)"


# -- properties ------------------------------------------------------------------------------


@given(outcomes=st.lists(st.booleans(), max_size=40), failures=st.integers(1, 5))
def test_a_circuit_is_open_exactly_after_its_count_of_failures_in_a_row(
    outcomes: list[bool], failures: int
) -> None:
    """With no time passing: a request is let through until ``failures`` failures in a row
    (a success resets the count), and none after."""
    circuit = Circuit(failures, 30.0, lambda: 0.0)
    streak, opened = 0, False
    for succeeded in outcomes:
        allowed = circuit.acquire()
        assert allowed is not opened
        if not allowed:
            continue
        if succeeded:
            circuit.succeeded()
            streak = 0
        else:
            circuit.failed()
            streak += 1
            opened = streak >= failures
    assert (circuit.state == "open") is opened


@given(waited=st.floats(0, 100), cooldown=st.floats(0.1, 60))
def test_an_open_circuit_lets_one_trial_through_once_cooled_down(
    waited: float, cooldown: float
) -> None:
    clock = Clock()
    clock.now = 0.0  # elapsed time is then exactly ``waited``
    circuit = Circuit(1, cooldown, clock)
    circuit.failed()
    clock.now += waited
    cooled = waited >= cooldown
    assert circuit.acquire() is cooled
    assert circuit.acquire() is False  # a second request waits for the trial, or the rest
    assert circuit.resting()
    if cooled:
        circuit.released()  # the trial said nothing: the next request may try
        assert circuit.acquire()


@given(text=st.text(max_size=3000))
def test_a_failed_attempts_text_is_bounded_and_storable(text: str) -> None:
    attempt = FailedAttempt(provider="p", error=ServerError(text), duration_ms=1.0)
    step = RunTrace().record_failure(1, attempt)
    assert len(step.error) <= ERROR_CHARS and "\x00" not in step.error
    step.error.encode("utf-8")  # no lone surrogate


def test_a_chain_passes_every_field_of_a_request_and_an_answer_through() -> None:
    """Built field by field for speed, the member's request and the chain's answer still carry
    every field (a field added later fails here until the chain passes it on)."""
    seen: list[CompletionRequest] = []
    answer = CompletionResponse(content="c", tool_calls=(ToolCall.of("id1", "weather", {}),),
                                usage=Usage(3, 4), stop=Stop.TOOL_CALLS, finish_reason="tc",
                                refusal="r", thinking="t", model="m",
                                provider_state=ProviderState("x", {"k": 1}), raw={"a": 1},
                                response_id="rid")  # fmt: skip

    class Member(BaseProvider):
        async def complete(self, request: CompletionRequest) -> CompletionResponse:
            seen.append(request)
            return answer

    request = CompletionRequest(messages=(ChatMessage.user("hi"),), tools=(weather.spec,),
                                tool_choice="required", temperature=0.5, max_tokens=9,
                                reasoning=Reasoning(effort="low"), capture_raw=True, stream=True,
                                on_delta=lambda d: None, dropped_turns=2,
                                output=OutputSchema.of({"type": "object"}), output_forced=True,
                                on_failure=lambda a: None)  # fmt: skip
    got = asyncio.run(FallbackProvider([Member(name="one")]).complete(request))
    sent = seen[0]
    for f in dataclasses.fields(CompletionRequest):
        if f.name not in ("on_delta", "on_failure"):
            assert getattr(sent, f.name) == getattr(request, f.name), f.name
    assert sent.on_delta is not None and sent.on_failure is None
    for f in dataclasses.fields(CompletionResponse):
        if f.name not in ("provider", "provider_state"):
            assert getattr(got, f.name) == getattr(answer, f.name), f.name
    assert got.provider == "one" and got.provider_state is not None
    assert got.provider_state.data["k"] == 1


def test_a_workspaces_fallback_chain_serves_a_run_that_names_none(
    tmp_path: Path, on_path: Path
) -> None:
    plugin(on_path, SECRETS_PLUGIN, "all = twplugin:all_tools")
    place = tmp_path / "workspace.toml"
    place.write_text('fallback = ["scripted"]\n')
    done = cli_run(tmp_path, "--provider", "openai", "--base-url", refused_url() + "/v1",
                   "--model", "gpt-test", "--trust-zone", "local", "--workspace", str(place),
                   env={"OPENAI_API_KEY": KEY})  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "✗ provider openai failed (ProviderConnectionError); trying local model" in done.output
    assert done.output.splitlines()[-1].startswith("completed")
    told = cli_run(tmp_path, "--provider", "openai", "--base-url", refused_url() + "/v1",
                   "--model", "gpt-test", "--workspace", str(place), "--fallback", "groq:m",
                   env={"OPENAI_API_KEY": KEY, "GROQ_API_KEY": KEY})  # fmt: skip
    assert "trying local model" not in told.output  # --fallback says otherwise


@pytest.mark.parametrize(
    ("entries", "said"),
    [('["nosuch"]', "fallback: unknown provider 'nosuch'"),
     ('["openai:"]', "fallback openai: a model name after the colon is required")],
)  # fmt: skip
def test_a_bad_workspace_fallback_is_refused_naming_it(
    tmp_path: Path, entries: str, said: str
) -> None:
    from toolwire.workspace.config import load_workspace

    place = tmp_path / "workspace.toml"
    place.write_text(f"fallback = {entries}\n")
    with pytest.raises(ConfigError, match=said):
        load_workspace(place)
