"""The adapters against servers as they really behave, over real loopback HTTP: the tool choice
always on the wire, each server's quirks, empty turns that fail, context overflow, error bodies
kept, JSON answered to stream requests, unknown usage, and streams that never end an event."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from toolwire import ChatMessage, ToolLoop, ToolRegistry, tool
from toolwire.core.errors import EmptyCompletion, MalformedResponse, ProviderError
from toolwire.loop.loop import RunOptions, TerminationReason
from toolwire.providers.base import CompletionRequest, Delta, Stop
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.select import create_provider
from toolwire.providers.sse import MAX_EVENT_BYTES

from .conversation import MESSAGES, PLAIN, TOOLS
from .servers import ADAPTERS, KEY, Captured, FakeModel, loopback, make_provider, no_sleep


@tool(group="demo", data_class="public")
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: rain"


class _Json(FakeModel):
    """Answers every request, streamed or not, with a whole JSON body (a proxy that does not
    stream)."""

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        return self.answer(path, headers, body), "application/json"


class _Fixed(FakeModel):
    """Answers every request with the same status, bytes and content type."""

    __slots__ = ("content", "kind", "status")

    def __init__(self, content: bytes, kind: str, status: int = 200) -> None:
        super().__init__()
        self.content, self.kind, self.status = content, kind, status

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        self.captured.append(Captured(path, headers, body))
        return self.content, self.kind


class _StatusHandler(BaseHTTPRequestHandler):
    server: _StatusServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        model = self.server.model
        body = self.rfile.read(int(self.headers["content-length"]))
        model.captured.append(Captured(self.path, dict(self.headers), body))
        self.send_response(model.status)
        self.send_header("content-type", model.kind)
        self.send_header("content-length", str(len(model.content)))
        self.end_headers()
        self.wfile.write(model.content)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _StatusServer(ThreadingHTTPServer):
    daemon_threads = True
    model: _Fixed


@contextmanager
def answering(model: _Fixed) -> Iterator[str]:
    server = _StatusServer(("127.0.0.1", 0), _StatusHandler)
    server.model = model
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def complete(provider: Any, request: CompletionRequest) -> Any:
    return asyncio.run(provider.complete(request))


WITH_TOOLS = CompletionRequest(messages=(ChatMessage.user("Weather?"),), tools=TOOLS[:1])


# -- tool_choice ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "openai", "anthropic", "gemini"),
    [
        ("auto", "auto", {"type": "auto"}, {"mode": "AUTO"}),
        ("none", "none", {"type": "none"}, {"mode": "NONE"}),
        ("required", "required", {"type": "any"}, {"mode": "ANY"}),
        ("weather", {"type": "function", "function": {"name": "weather"}},
         {"type": "tool", "name": "weather"},
         {"mode": "ANY", "allowedFunctionNames": ["weather"]}),
    ],
)  # fmt: skip
def test_every_tool_choice_is_sent_in_each_api_s_own_shape(
    choice: str, openai: Any, anthropic: Any, gemini: Any
) -> None:
    request = replace(WITH_TOOLS, tool_choice=choice)
    assert make_provider("openai").encode(request)["tool_choice"] == openai
    assert make_provider("anthropic").encode(request)["tool_choice"] == anthropic
    config = make_provider("gemini").encode(request)["toolConfig"]
    assert config == {"functionCallingConfig": gemini}
    assert "tool_choice" not in make_provider("openai").encode(PLAIN)  # no tools, no choice


def test_a_server_without_named_choices_gets_required_and_that_tool_alone() -> None:
    provider = create_provider("llama-server", model="m", environ={})
    assert isinstance(provider, OpenAIProvider)
    body = provider.encode(replace(CompletionRequest(messages=MESSAGES, tools=TOOLS),
                                   tool_choice="add"))  # fmt: skip
    assert body["tool_choice"] == "required"
    assert [t["function"]["name"] for t in body["tools"]] == ["add"]


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_run_sends_auto_then_none_at_the_synthesis_and_a_forced_choice_only_first(
    name: str,
) -> None:
    model = FakeModel(turns=[[("weather", {"city": "Oslo"})], [("weather", {"city": "Rome"})]])
    with loopback(model) as base:
        provider = make_provider(name, base=base)
        loop = ToolLoop(provider, ToolRegistry([weather]))
        for choice in ("auto", "required"):
            model.captured.clear()
            options = RunOptions(max_rounds=2, stream=False, tool_choice=choice)
            result = loop.run_sync([ChatMessage.user("Weather?")], options=options)
            assert result.reason is TerminationReason.MAX_ITERATIONS
            sent = [choice_of(name, c.json()) for c in model.captured]
            assert sent == [choice, "auto", "none"]


def choice_of(name: str, body: dict[str, Any]) -> str:
    if name == "openai":
        return str(body["tool_choice"])
    if name == "anthropic":
        kind = body["tool_choice"]["type"]
        return str({"any": "required"}.get(kind, kind))
    mode = body["toolConfig"]["functionCallingConfig"]["mode"]
    return {"AUTO": "auto", "NONE": "none", "ANY": "required"}[mode]


def test_a_choice_naming_a_tool_not_offered_is_refused_before_any_call() -> None:
    with pytest.raises(ValueError, match="tool_choice must be"):
        RunOptions(tool_choice="no such tool")
    model = FakeModel(turns=["hi"])
    with loopback(model) as base:
        loop = ToolLoop(make_provider("openai", base=base), ToolRegistry([weather]))
        with pytest.raises(Exception, match="'clock', a tool this run does not offer"):
            loop.run_sync([ChatMessage.user("?")], options=RunOptions(tool_choice="clock"))
    assert model.captured == []


# -- quirks --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "field"),
    [
        ("openai", None, "max_completion_tokens"),  # OpenAI's own API
        ("llama-cpp-python", "", "max_tokens"),
        ("llama-server", "", "max_tokens"),
        ("litellm", "", "max_tokens"),
        ("ollama", "", "max_tokens"),
        ("vllm", "", "max_tokens"),
        ("lmstudio", "", "max_tokens"),
    ],
)
def test_each_preset_replays_a_call_turn_and_caps_output_as_its_server_needs(
    name: str, content: Any, field: str
) -> None:
    env = {"OPENAI_API_KEY": KEY}
    provider = create_provider(name, model="m", environ=env)
    assert isinstance(provider, OpenAIProvider)
    body = provider.encode(replace(CompletionRequest(messages=MESSAGES, tools=TOOLS),
                                   max_tokens=8))  # fmt: skip
    replayed = body["messages"][6]  # the assistant turn with one call and no text
    assert (replayed["role"], "content" in replayed, replayed.get("content")) == (
        "assistant", True, content
    )  # fmt: skip
    assert (body.get(field), len({"max_tokens", "max_completion_tokens"} & body.keys())) == (8, 1)


def test_openai_at_another_base_url_sends_max_tokens_and_an_empty_content() -> None:
    provider = create_provider("openai", model="m", base_url="http://127.0.0.1:9/v1", environ={})
    assert isinstance(provider, OpenAIProvider)
    body = provider.encode(replace(CompletionRequest(messages=MESSAGES), max_tokens=8))
    assert (body["max_tokens"], "max_completion_tokens" in body) == (8, False)
    assert body["messages"][6]["content"] == ""


def test_llama_cpp_python_gets_tool_requests_whole_and_no_stream_usage_option() -> None:
    model = FakeModel(turns=[[("weather", {"city": "Oslo"})], "Rain."])
    seen: list[Delta] = []
    with loopback(model) as base:
        provider = create_provider("llama-cpp-python", model="m", base_url=f"{base}/v1",
                                   environ={})  # fmt: skip
        first = complete(provider, replace(WITH_TOOLS, stream=True, on_delta=seen.append))
        plain = complete(provider, replace(PLAIN, stream=True))
    assert [c.name for c in first.tool_calls] == ["weather"]
    bodies = [c.json() for c in model.captured]
    assert ("stream" in bodies[0], bodies[0]["tool_choice"]) == (False, "auto")
    assert (bodies[1]["stream"], "stream_options" in bodies[1]) == (True, False)
    assert plain.usage.known is False  # its streams carry no usage: tokens unknown


# -- honest endings ------------------------------------------------------------------------


def _empty_body(name: str) -> bytes:
    bodies = {
        "openai": {"choices": [{"index": 0, "message": {"role": "assistant", "content": ""},
                                "finish_reason": "stop"}]},
        "anthropic": {"type": "message", "role": "assistant", "content": [],
                      "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 0}},
        "gemini": {"candidates": [{"content": {"role": "model", "parts": []},
                                   "finishReason": "STOP"}]},
    }  # fmt: skip
    return json.dumps(bodies[name]).encode()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", ADAPTERS)
def test_an_empty_turn_is_an_empty_completion_error_never_an_answer(
    name: str, stream: bool
) -> None:
    if stream and name == "anthropic":
        events = (
            b'event: message_start\ndata: {"type": "message_start", "message": {"type": "message",'
            b' "role": "assistant", "content": [], "usage": {"input_tokens": 3}}}\n\n'
            b'event: message_delta\ndata: {"type": "message_delta", "delta": {"stop_reason":'
            b' "end_turn"}, "usage": {"output_tokens": 0}}\n\n'
            b'event: message_stop\ndata: {"type": "message_stop"}\n\n'
        )
        model = _Fixed(events, "text/event-stream")
    elif stream:
        model = _Fixed(b"data: " + _empty_body(name) + b"\n\n", "text/event-stream")
    else:
        model = _Fixed(_empty_body(name), "application/json")
    with loopback(model) as base, pytest.raises(EmptyCompletion) as caught:
        complete(make_provider(name, base=base), replace(PLAIN, stream=stream))
    assert "the model's answer was empty: no text and no tool calls" in str(caught.value)
    assert f"({base}/" in str(caught.value)
    assert len(model.captured) == 1  # not retried


@pytest.mark.parametrize("name", ADAPTERS)
def test_an_empty_event_stream_is_an_empty_completion_naming_the_endpoint(name: str) -> None:
    model = _Fixed(b"", "text/event-stream")
    with loopback(model) as base, pytest.raises(EmptyCompletion) as caught:
        complete(make_provider(name, base=base), replace(PLAIN, stream=True))
    assert "the event stream ended without a single event" in str(caught.value)
    assert caught.value.endpoint is not None and caught.value.endpoint.startswith(base)


@pytest.mark.parametrize(
    ("name", "status", "error"),
    [
        ("openai", 400, {"error": {"message": "This model's maximum context length is 2048 "
                                   "tokens.", "type": "invalid_request_error",
                                   "param": "messages", "code": "context_length_exceeded"}}),
        ("openai", 400, {"error": {"code": 400, "message": "the request exceeds the available "
                                   "context size, try increasing it",
                                   "type": "exceed_context_size_error"}}),
        ("anthropic", 400, {"type": "error", "error": {"type": "invalid_request_error",
                            "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
        ("gemini", 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message":
                         "The input token count (1200000) exceeds the maximum number of tokens "
                         "allowed (1048576)."}}),
    ],
)  # fmt: skip
def test_context_overflow_ends_the_run_truncated_context_window(
    name: str, status: int, error: dict[str, Any]
) -> None:
    model = _Fixed(json.dumps(error).encode(), "application/json", status)
    with answering(model) as base:
        loop = ToolLoop(make_provider(name, base=base), ToolRegistry([weather]))
        result = loop.run_sync([ChatMessage.user("?")], options=RunOptions(stream=False))
    assert (result.reason, result.truncated, result.stop) == (
        TerminationReason.CONTEXT_WINDOW, True, Stop.CONTEXT_WINDOW
    )  # fmt: skip
    assert len(model.captured) == 1


def test_an_error_body_keeps_code_type_param_and_a_redacted_message_and_names_the_endpoint() -> (
    None
):
    error = {"error": {"message": f"Invalid value for tools (key {KEY})",
                       "type": "invalid_request_error", "param": "tools",
                       "code": "invalid_value"}}  # fmt: skip
    model = _Fixed(json.dumps(error).encode(), "application/json", 400)
    with answering(model) as base, pytest.raises(ProviderError) as caught:
        complete(make_provider("openai", base=base), PLAIN)
    exc = caught.value
    assert (exc.status, exc.code, exc.type, exc.param) == (
        400, "invalid_value", "invalid_request_error", "tools"
    )  # fmt: skip
    assert exc.endpoint == f"{base}/v1/chat/completions"
    assert str(exc) == (
        f"openai: HTTP 400 request refused ({base}/v1/chat/completions) [code invalid_value, "
        "type invalid_request_error, param tools]: Invalid value for tools (key [redacted])"
    )
    assert KEY not in str(exc)


# -- stream robustness ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_json_body_answered_to_a_stream_request_is_the_whole_answer(name: str) -> None:
    model = _Json(turns=[[("weather", {"city": "Oslo"})], "Rain in Oslo."])
    seen: list[Delta] = []
    with loopback(model) as base:
        loop = ToolLoop(make_provider(name, base=base), ToolRegistry([weather]))
        from toolwire.policy.trace import RunTrace

        trace = RunTrace(delta_observers=[lambda r, d: seen.append(d)])
        result = loop.run_sync([ChatMessage.user("Weather?")], options=RunOptions(stream=True),
                               trace=trace)  # fmt: skip
    assert (result.reason, result.final_content) == (TerminationReason.COMPLETED, "Rain in Oslo.")
    assert [i.result for i in result.trace] == ["Oslo: rain"]
    assert seen == [Delta("content", "Rain in Oslo.")]
    assert len(model.captured) == 2  # nothing retried


def test_a_stream_request_answered_with_html_is_a_protocol_error_not_retried() -> None:
    model = _Fixed(b"<html>proxy</html>", "text/html")
    with loopback(model) as base:
        provider = OpenAIProvider(model="m", api_key=KEY, base_url=f"{base}/v1",
                                  http=HttpSettings(sleep=no_sleep))  # fmt: skip
        with pytest.raises(MalformedResponse) as caught:
            complete(provider, replace(PLAIN, stream=True))
    assert str(caught.value) == (
        f"openai: answered a stream request with text/html, not events or JSON "
        f"({base}/v1/chat/completions): <html>proxy</html>"
    )
    assert len(model.captured) == 1


class _Endless(BaseHTTPRequestHandler):
    """Streams ``x`` bytes without a line end, for as long as the client reads them."""

    server: _EndlessServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        piece = b"data: " + b"x" * 65_536
        try:
            while not self.server.stop.is_set():
                self.wfile.write(piece)
                self.server.sent += len(piece)
                piece = b"x" * 65_536
        except OSError:
            return

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _EndlessServer(ThreadingHTTPServer):
    daemon_threads = True
    sent = 0
    stop: threading.Event


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_server_streaming_bytes_without_an_event_end_is_stopped_by_the_pending_event_cap(
    name: str,
) -> None:
    server = _EndlessServer(("127.0.0.1", 0), _Endless)
    server.stop = threading.Event()
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(MalformedResponse) as caught:
            complete(make_provider(name, base=base), replace(PLAIN, stream=True))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        server.stop.set()
        server.shutdown()
        server.server_close()
        thread.join()
    assert f"one event over {MAX_EVENT_BYTES} bytes without its end (MAX_EVENT_BYTES)" in str(
        caught.value
    )
    assert f"({base}/" in str(caught.value)
    assert time.monotonic() - started < 5  # fails fast, long before the silence timeout
    assert peak < 4 * MAX_EVENT_BYTES  # memory bounded by the cap, not by what was sent


def test_a_stream_of_many_small_events_is_capped_in_all() -> None:
    from toolwire.providers.sse import MAX_STREAM_BYTES, EventDecoder, StreamTooLarge

    decoder = EventDecoder()
    piece = b": keep-alive comment\n\n" * 4096
    pieces = 2 * MAX_STREAM_BYTES // len(piece)  # twice the cap: bounded, even without one
    with pytest.raises(StreamTooLarge) as caught:
        for _ in range(pieces):
            decoder.feed(piece)
    assert (caught.value.limit, decoder.total_bytes > MAX_STREAM_BYTES) == (
        "MAX_STREAM_BYTES", True
    )  # fmt: skip


def test_the_event_decoder_keeps_events_whole_across_any_split() -> None:
    from toolwire.providers.sse import Event, EventDecoder

    stream = b"event: a\r\ndata: 1\r\ndata: 2\r\n\r\n: c\n\ndata:3\r\rdata: 4\n\n"
    for cut in range(len(stream) + 1):
        decoder = EventDecoder()
        events = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:])
        assert events == [Event("a", "1\n2"), Event("", "3"), Event("", "4")], cut


# -- unknown usage -------------------------------------------------------------------------


def test_unknown_usage_is_estimated_marked_and_counted_by_the_budget() -> None:
    model = FakeModel(turns=[[("weather", {"city": "Oslo"})], [("weather", {"city": "Rome"})]])
    with loopback(model) as base:
        provider = OpenAIProvider(model="m", base_url=f"{base}/v1", stream_usage=False,
                                  http=HttpSettings(sleep=no_sleep))  # fmt: skip
        loop = ToolLoop(provider, ToolRegistry([weather]))
        options = RunOptions(max_rounds=5, stream=True, max_total_tokens=1)
        result = loop.run_sync([ChatMessage.user("Weather?")], options=options)
    assert result.reason is TerminationReason.BUDGET_EXHAUSTED
    assert (result.usage.known, result.usage.total_tokens > 1) == (False, True)
    assert len(model.captured) == 1


def test_a_closed_port_error_still_names_the_endpoint() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    provider = OpenAIProvider(model="m", api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1",
                              http=HttpSettings(sleep=no_sleep))  # fmt: skip
    with pytest.raises(ProviderError) as caught:
        complete(provider, replace(PLAIN, stream=True))
    assert caught.value.endpoint == f"http://127.0.0.1:{port}/v1/chat/completions"


class _NoUsage(FakeModel):
    """A priced model's server that never reports usage, whole or streamed."""

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        answer, kind = super().respond(path, headers, body)
        if kind == "application/json":
            return json.dumps({k: v for k, v in json.loads(answer).items()
                               if k != "usage"}).encode(), kind  # fmt: skip
        events = answer.decode().split("\n\n")
        return "\n\n".join(e for e in events if '"usage"' not in e).encode(), kind


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("reported", [True, False], ids=["reported", "unreported"])
def test_a_cost_priced_from_estimated_tokens_is_marked_estimated(
    stream: bool, reported: bool
) -> None:
    """OpenRouter's table prices its models at any base URL, so a loopback one is priced."""
    model = (FakeModel if reported else _NoUsage)(turns=["It rains."])
    with loopback(model) as base:
        provider = create_provider("openrouter", model="openai/gpt-4o-mini",
                                   base_url=f"{base}/v1", environ={})  # fmt: skip
        result = ToolLoop(provider, ToolRegistry()).run_sync(
            [ChatMessage.user("Weather?")], options=RunOptions(stream=stream)
        )
    assert result.cost.usd > 0 and result.cost.complete
    assert (result.usage.known, result.cost.estimated) == (reported, not reported)
