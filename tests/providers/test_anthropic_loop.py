"""Anthropic over real loopback HTTP, whole and streamed: ToolLoop runs with parallel tool
uses, an error result, thinking replayed with its signatures, the synthesis round, a paused
turn, and a stream that fails after its first event. Every request body the server receives is
validated against the SDK's request type; every answer is built from the SDK's models."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from anthropic.types import RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolUseBlock
from anthropic.types import Usage as SdkUsage

from toolwire import ChatMessage, CompletionRequest, ToolLoop, ToolRegistry, ToolResult, tool
from toolwire.core.errors import MalformedResponse, ServerError
from toolwire.loop.loop import TerminationReason
from toolwire.policy.options import RunOptions
from toolwire.policy.trace import RunTrace
from toolwire.providers.base import Delta, Reasoning, Stop

from .servers import make_provider
from .test_anthropic_sdk import Event, events, message, sse, validate_request, whole

Reply = Callable[[dict[str, Any]], list[Event] | dict[str, Any]]


@dataclass(slots=True)
class Script:
    """Answers request ``n`` with ``turns[n]``: whole, or as events when the body asks."""

    turns: Sequence[Any]
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def answer(self, body: dict[str, Any]) -> tuple[bytes, str]:
        validate_request(body)
        self.bodies.append(body)
        turn = self.turns[len(self.bodies) - 1]
        if isinstance(turn, list):  # raw events, played as they are
            return sse(turn), "text/event-stream"
        if body.get("stream") is True:
            return sse(events(turn)), "text/event-stream"
        return json.dumps(whole(turn)).encode(), "application/json"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        out, kind = self.server.script.answer(body)
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: Script


@contextmanager
def serving(script: Script) -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.script = script
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@tool(group="demo", data_class="public")
def weather(city: str) -> ToolResult:
    """Current weather for a city."""
    return ToolResult.text(f"{city}: 3°C, rain")


@tool(group="demo", data_class="public")
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def think(text: str, signature: str) -> ThinkingBlock:
    return ThinkingBlock(type="thinking", thinking=text, signature=signature)


def use(ident: str, name: str, arguments: dict[str, Any]) -> ToolUseBlock:
    return ToolUseBlock(type="tool_use", id=ident, name=name, input=arguments)


def say(text: str) -> TextBlock:
    return TextBlock(type="text", text=text)


HIDDEN = RedactedThinkingBlock(type="redacted_thinking", data="EmwKAhgBEgy3va3pzix")
ROUND_1 = message(
    [
        think("Two look-ups at once.", "sig-round-1"),
        say("Checking."),
        use("toolu_1a", "weather", {"city": "Oslo"}),
        use("toolu_1b", "add", {"a": 2, "b": "two"}),
    ],
    "tool_use",
)
ROUND_2 = message(
    [think("Bergen too.", "sig-round-2"), HIDDEN, use("toolu_2a", "weather", {"city": "Bergen"})],
    "tool_use",
)
FINAL = message([say("Oslo and Bergen: rain.")], "end_turn")
REPLAY_1 = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "Two look-ups at once.", "signature": "sig-round-1"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1a", "name": "weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "toolu_1b", "name": "add", "input": {"a": 2, "b": "two"}},
    ],
}
REPLAY_2 = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "Bergen too.", "signature": "sig-round-2"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
        {"type": "tool_use", "id": "toolu_2a", "name": "weather", "input": {"city": "Bergen"}},
    ],
}


def run(script: Script, stream: bool, max_rounds: int = 2) -> tuple[Any, list[tuple[int, Delta]]]:
    seen: list[tuple[int, Delta]] = []
    trace = RunTrace(delta_observers=[lambda round_, delta: seen.append((round_, delta))])
    options = RunOptions(
        max_rounds=max_rounds, reasoning=Reasoning(budget_tokens=2048), stream=stream
    )
    with serving(script) as base:
        loop = ToolLoop(make_provider("anthropic", base=base), ToolRegistry([weather, add]))
        result = loop.run_sync([ChatMessage.user("Weather?")], options=options, trace=trace)
    return result, seen


@pytest.mark.parametrize("stream", [False, True])
def test_three_rounds_with_thinking_parallel_calls_an_error_and_the_synthesis(
    stream: bool,
) -> None:
    script = Script([ROUND_1, ROUND_2, FINAL])
    result, deltas = run(script, stream)
    assert (result.reason, result.final_content) == (
        TerminationReason.MAX_ITERATIONS,
        "Oslo and Bergen: rain.",
    )
    assert [(i.name, i.is_error) for i in result.trace] == [
        ("weather", False),
        ("add", True),
        ("weather", False),
    ]
    first, second, synthesis = script.bodies
    assert [b.get("stream", False) for b in script.bodies] == [stream] * 3
    for body in script.bodies:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
        assert body["max_tokens"] == 4096
        assert [t["name"] for t in body["tools"]] == ["weather", "add"]
    assert first["tool_choice"] == second["tool_choice"] == {"type": "auto"}
    assert synthesis["tool_choice"] == {"type": "none"}
    assert second["messages"][1] == REPLAY_1
    results = second["messages"][2]["content"]
    assert [(r["tool_use_id"], r["is_error"]) for r in results] == [
        ("toolu_1a", False),
        ("toolu_1b", True),
    ]
    assert results[0]["content"] == "Oslo: 3°C, rain"
    assert synthesis["messages"][1:4] == [REPLAY_1, second["messages"][2], REPLAY_2]
    streamed = [
        (1, Delta("thinking", "Two look-u")),
        (1, Delta("thinking", "ps at once.")),
        (1, Delta("content", "Chec")),
        (1, Delta("content", "king.")),
        (2, Delta("thinking", "Berge")),
        (2, Delta("thinking", "n too.")),
        (3, Delta("content", "Oslo and Be")),
        (3, Delta("content", "rgen: rain.")),
    ]
    assert deltas == (streamed if stream else [])


@pytest.mark.parametrize("stream", [False, True])
def test_a_paused_turn_continues_with_its_content_sent_back_verbatim(stream: bool) -> None:
    paused = message([think("Searching.", "sig-pause"), say("Still looking")], "pause_turn")
    script = Script([paused, FINAL])
    result, _ = run(script, stream, max_rounds=3)
    assert (result.reason, result.final_content) == (
        TerminationReason.COMPLETED,
        "Oslo and Bergen: rain.",
    )
    assert script.bodies[1]["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Searching.", "signature": "sig-pause"},
                {"type": "text", "text": "Still looking"},
            ],
        }
    ]


CACHED = SdkUsage(
    input_tokens=40, cache_creation_input_tokens=900, cache_read_input_tokens=2500, output_tokens=60
)
TURNS = [
    ROUND_1,
    ROUND_2,
    message([say("cut")], "max_tokens", usage=CACHED),
    message([say("too long")], "model_context_window_exceeded"),
    message([say("No.")], "refusal"),
    message([], "refusal", stop_details={"type": "refusal", "explanation": "Unsafe."}),
    message([think("Hm.", "sig-p"), say("wait")], "pause_turn"),
    message([say("Fine.")], "stop_sequence"),
    message([use("toolu_x", "add", {})], "tool_use"),
]


@pytest.mark.parametrize("turn", TURNS, ids=lambda m: str(m.stop_reason))
def test_a_streamed_turn_decodes_to_the_same_response_as_the_whole_one(turn: Any) -> None:
    script = Script([turn, turn])
    request = CompletionRequest(messages=(ChatMessage.user("x"),), capture_raw=False)
    with serving(script) as base:
        provider = make_provider("anthropic", base=base)
        once = provider.complete(request)
        twice = provider.complete(CompletionRequest(messages=request.messages, stream=True))
        got_whole, got_streamed = asyncio.run(once), asyncio.run(twice)
    assert got_streamed == got_whole
    assert got_whole.finish_reason == turn.stop_reason


def test_stop_reasons_and_cache_usage_through_the_stream() -> None:
    script = Script([TURNS[2], TURNS[5]])
    request = CompletionRequest(messages=(ChatMessage.user("x"),), stream=True)
    with serving(script) as base:
        provider = make_provider("anthropic", base=base)
        cut = asyncio.run(provider.complete(request))
        refused = asyncio.run(provider.complete(request))
    assert (cut.stop, cut.content) == (Stop.MAX_TOKENS, "cut")
    assert (cut.usage.prompt_tokens, cut.usage.cache_write_tokens) == (3440, 900)
    assert (cut.usage.cache_read_tokens, cut.usage.completion_tokens) == (2500, 60)
    assert (refused.stop, refused.refusal) == (Stop.REFUSAL, "Unsafe.")


def test_an_error_event_after_the_first_event_is_typed_and_not_retried() -> None:
    started = events(FINAL)[:3]
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    script = Script([[*started, ("error", overloaded)], FINAL])
    request = CompletionRequest(messages=(ChatMessage.user("x"),), stream=True)
    with serving(script) as base:
        provider = make_provider("anthropic", base=base)
        with pytest.raises(ServerError, match="overloaded_error") as caught:
            asyncio.run(provider.complete(request))
    assert caught.value.retryable  # transient by kind, yet the stream had begun
    assert len(script.bodies) == 1


def test_a_stream_cut_before_message_stop_is_malformed() -> None:
    script = Script([events(FINAL)[:-1]])
    request = CompletionRequest(messages=(ChatMessage.user("x"),), stream=True)
    with serving(script) as base:
        provider = make_provider("anthropic", base=base)
        with pytest.raises(MalformedResponse, match=r"^anthropic: response stream ended before"):
            asyncio.run(provider.complete(request))
