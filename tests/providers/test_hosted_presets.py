"""The hosted OpenAI-compatible vendors by name (Mistral, Groq, DeepSeek, xAI, Together,
Fireworks, Cerebras): each run goes through the real OpenAI adapter to a loopback server shaped
like the vendor, and the wire carries what that vendor takes: its output-cap field, the tool
choice in the named form, its content beside replayed calls, stream_options only where it is
honoured, the key from the vendor's variable; and the vendor's price table prices the run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from typer.testing import CliRunner

import toolwire.cli.run  # noqa: F401  (registers the run command)
from toolwire import ChatMessage, ToolLoop, ToolRegistry, tool
from toolwire.cli.app import app
from toolwire.core.errors import AuthenticationError, ConfigError, ProviderError
from toolwire.loop.loop import RunOptions, TerminationReason
from toolwire.providers.base import CompletionRequest, Delta, Reasoning
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.presets import COMPATIBLE_QUIRKS
from toolwire.providers.select import create_provider
from toolwire.telemetry.genai import provider_name

from .conversation import PLAIN
from .servers import (
    KEY,
    Captured,
    FakeModel,
    ModelServer,
    loopback,
    openai_chunks,
    openai_reply,
    sse,
)
from .test_real_behaviour import _Fixed, answering, complete


@dataclass(frozen=True, slots=True)
class Vendor:
    """What one vendor's preset sends, and a model its price table lists."""

    url: str
    zone: str
    key_variable: str
    model: str
    cap: str  # the output-cap field
    replayed: Any  # content of a replayed turn of calls without text; "absent": no key
    asks_usage: bool  # stream_options.include_usage is sent
    usage_unasked: bool  # the vendor's streams carry usage without being asked


VENDORS = {
    "mistral": Vendor("https://api.mistral.ai/v1", "external_eu", "MISTRAL_API_KEY",
                      "mistral-large-latest", "max_tokens", None, False, True),
    "groq": Vendor("https://api.groq.com/openai/v1", "external_global", "GROQ_API_KEY",
                   "llama-3.3-70b-versatile", "max_completion_tokens", None, True, False),
    "deepseek": Vendor("https://api.deepseek.com", "external_global", "DEEPSEEK_API_KEY",
                       "deepseek-chat", "max_tokens", "", True, False),
    "xai": Vendor("https://api.x.ai/v1", "external_global", "XAI_API_KEY", "grok-3",
                  "max_tokens", "", True, False),
    "together": Vendor("https://api.together.ai/v1", "external_global", "TOGETHER_API_KEY",
                       "meta-llama/Llama-3.3-70B-Instruct-Turbo", "max_tokens", None, True,
                       False),
    "fireworks": Vendor("https://api.fireworks.ai/inference/v1", "external_global",
                        "FIREWORKS_API_KEY", "accounts/fireworks/models/deepseek-v3p2",
                        "max_tokens", None, False, True),
    "cerebras": Vendor("https://api.cerebras.ai/v1", "external_global", "CEREBRAS_API_KEY",
                       "llama-3.3-70b", "max_completion_tokens", None, True, False),
}  # fmt: skip
CAPS = {"max_tokens", "max_completion_tokens"}


@tool(group="demo", data_class="public")
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: rain"


class VendorModel(FakeModel):
    """A vendor-shaped server: its streams carry usage in the last chunk when asked, or
    always (``usage_unasked``, as Mistral and Fireworks document)."""

    __slots__ = ("usage_unasked",)

    def __init__(self, turns: list[Any], usage_unasked: bool) -> None:
        super().__init__(turns)
        self.usage_unasked = usage_unasked

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        if not self.usage_unasked:
            return super().respond(path, headers, body)
        self.captured.append(Captured(path, headers, body))
        request = json.loads(body)
        reply = openai_reply(request, self.turns)
        if request.get("stream") is True:
            return sse(openai_chunks(reply, include_usage=True)), "text/event-stream"
        return json.dumps(reply).encode(), "application/json"


def provider_at(name: str, base: str) -> OpenAIProvider:
    vendor = VENDORS[name]
    provider = create_provider(name, model=vendor.model, base_url=f"{base}/v1",
                               environ={vendor.key_variable: KEY})  # fmt: skip
    assert isinstance(provider, OpenAIProvider)
    return provider


def run(name: str, choice: str = "weather") -> tuple[Any, list[Captured]]:
    """A streamed two-round run: a forced call of weather, then the answer."""
    vendor = VENDORS[name]
    model = VendorModel([[("weather", {"city": "Oslo"})], "Rain in Oslo."], vendor.usage_unasked)
    options = RunOptions(max_tokens=64, tool_choice=choice, stream=True)
    with loopback(model) as base:
        loop = ToolLoop(provider_at(name, base), ToolRegistry([weather]))
        result = loop.run_sync([ChatMessage.user("Weather in Oslo?")], options=options)
    return result, model.captured


@pytest.mark.parametrize("name", VENDORS)
def test_a_run_sends_each_vendor_its_own_wire_shape_and_is_priced(name: str) -> None:
    vendor = VENDORS[name]
    result, captured = run(name)
    assert (result.reason, result.final_content) == (TerminationReason.COMPLETED, "Rain in Oslo.")
    first, second = (c.json() for c in captured)
    assert [c.headers["authorization"] for c in captured] == [f"Bearer {KEY}"] * 2
    assert [c.path for c in captured] == ["/v1/chat/completions"] * 2
    for body in (first, second):
        assert (body["model"], body["stream"], body[vendor.cap]) == (vendor.model, True, 64)
        assert CAPS & body.keys() == {vendor.cap}
        assert ("stream_options" in body) is vendor.asks_usage
        if vendor.asks_usage:
            assert body["stream_options"] == {"include_usage": True}
    assert first["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    assert second["tool_choice"] == "auto"
    replayed = second["messages"][1]
    assert (replayed["role"], replayed["content"]) == ("assistant", vendor.replayed)
    assert [c["function"]["name"] for c in replayed["tool_calls"]] == ["weather"]
    # Usage came back (asked for, or unasked), so the price is exact, from the vendor's table.
    assert (result.usage.known, result.usage.prompt_tokens) == (True, 22)
    assert result.cost.usd > 0 and result.cost.complete and not result.cost.estimated


@pytest.mark.parametrize("name", VENDORS)
def test_required_is_sent_as_required_to_every_vendor(name: str) -> None:
    _, captured = run(name, choice="required")
    assert [c.json()["tool_choice"] for c in captured] == ["required", "auto"]


@pytest.mark.parametrize("name", VENDORS)
def test_reasoning_goes_as_reasoning_effort(name: str) -> None:
    vendor = VENDORS[name]
    provider = create_provider(name, model=vendor.model, environ={vendor.key_variable: KEY})
    assert isinstance(provider, OpenAIProvider)
    body = provider.encode(CompletionRequest(messages=PLAIN.messages, reasoning=Reasoning("high")))
    assert (body["reasoning_effort"], "reasoning" in body) == ("high", False)


@pytest.mark.parametrize("name", VENDORS)
def test_each_preset_resolves_to_the_vendor_with_its_key_and_never_shows_it(name: str) -> None:
    vendor = VENDORS[name]
    provider = create_provider(name, model=vendor.model, environ={vendor.key_variable: KEY})
    assert isinstance(provider, OpenAIProvider)
    assert (provider.name, provider.url(), provider.trust_zone) == (
        name, f"{vendor.url}/chat/completions", vendor.zone
    )  # fmt: skip
    assert (provider.max_tokens_field, provider.pricing_family) == (
        vendor.cap, provider.price_table
    )  # fmt: skip
    assert provider.price_table is not None
    assert provider.headers(KEY) == {"authorization": f"Bearer {KEY}"}
    assert KEY not in repr(provider) and KEY not in str(provider)
    unlisted = create_provider(name, model="someone/unlisted", environ={vendor.key_variable: KEY})
    assert isinstance(unlisted, OpenAIProvider) and unlisted.pricing_family is None


@pytest.mark.parametrize("name", VENDORS)
def test_a_missing_key_names_the_vendor_s_variable(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        create_provider(name, model="m", environ={"OPENAI_API_KEY": KEY})
    assert str(caught.value) == (
        f"provider {name} needs an API key: set {VENDORS[name].key_variable}"
    )


@pytest.mark.parametrize("name", VENDORS)
def test_a_key_echoed_in_a_401_is_masked_in_the_error(name: str) -> None:
    echoed = {"error": {"message": f"Invalid API key: {KEY}", "type": "invalid_request_error"}}
    model = _Fixed(json.dumps(echoed).encode(), "application/json", 401)
    with answering(model) as base, pytest.raises(AuthenticationError) as caught:
        complete(provider_at(name, base), PLAIN)
    error = caught.value
    assert str(error).startswith(f"{name}: HTTP 401 credentials refused ({base}/v1/")
    assert "[redacted]" in str(error)
    for shown in (str(error), repr(error), error.body):
        assert KEY not in shown
    assert error.__cause__ is None
    assert model.captured[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("name", VENDORS)
def test_the_cli_runs_each_vendor_by_name_with_its_key_variable(name: str) -> None:
    vendor = VENDORS[name]
    model = VendorModel(["hello from the vendor"], vendor.usage_unasked)
    with loopback(model) as base:
        result = CliRunner().invoke(
            app,
            ["run", "hi", "--provider", name, "--model", vendor.model, "--base-url", f"{base}/v1"],
            env={vendor.key_variable: KEY, "OPENAI_API_KEY": None},
        )
    assert result.exit_code == 0, result.output
    assert "hello from the vendor" in result.output
    assert KEY not in result.output
    assert model.captured[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("name", "conventional"),
    [("mistral", "mistral_ai"), ("groq", "groq"), ("deepseek", "deepseek"), ("xai", "x_ai"),
     ("together", "together"), ("fireworks", "fireworks"), ("cerebras", "cerebras")],
)  # fmt: skip
def test_telemetry_names_each_vendor_as_the_conventions_do(name: str, conventional: str) -> None:
    """The conventions name four of them; the others keep the name toolwire knows."""
    assert provider_name(name) == conventional


def test_the_cli_help_lists_every_vendor() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    for name in VENDORS:
        assert f" {name}," in flat


# -- DeepSeek's thinking mode: reasoning_content goes back with the turn it came with --------

REFUSED = (
    b'{"error": {"message": "The reasoning_content in the thinking mode must be passed back to'
    b' the API.", "type": "invalid_request_error", "param": null, "code": "invalid_request_error"}}'
)


class _Thinking(BaseHTTPRequestHandler):
    """DeepSeek's thinking mode: every answer has reasoning_content, and a request whose
    assistant turn of calls lacks it is refused with HTTP 400 (api-docs.deepseek.com,
    guides/thinking_mode)."""

    server: ModelServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        model = self.server.model
        body = self.rfile.read(int(self.headers["content-length"]))
        model.captured.append(Captured(self.path, dict(self.headers), body))
        request = json.loads(body)
        turns = [m for m in request["messages"] if m["role"] == "assistant"]
        if any(m.get("tool_calls") and not m.get("reasoning_content") for m in turns):
            self.answer(400, REFUSED, "application/json")
            return
        reply = openai_reply(request, model.turns)
        reply["choices"][0]["message"]["reasoning_content"] = f"thought {len(turns)}"
        if request.get("stream") is not True:
            self.answer(200, json.dumps(reply).encode(), "application/json")
            return
        chunks = openai_chunks(reply, include_usage=True)
        thought = {"index": 0, "delta": {"reasoning_content": f"thought {len(turns)}"}}
        chunks.insert(1, chunks[0] | {"choices": [thought | {"finish_reason": None}]})
        self.answer(200, sse(chunks), "text/event-stream")

    def answer(self, status: int, out: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def thinking(model: FakeModel) -> Iterator[str]:
    with loopback(model, _Thinking) as base:
        yield f"{base}/v1"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_deepseek_gets_each_turn_s_reasoning_back_with_it(stream: bool) -> None:
    model = FakeModel([[("weather", {"city": "Oslo"})], [("weather", {"city": "Rome"})], "Rain."])
    with thinking(model) as base:
        provider = create_provider("deepseek", model="deepseek-reasoner", base_url=base,
                                   environ={"DEEPSEEK_API_KEY": KEY})  # fmt: skip
        loop = ToolLoop(provider, ToolRegistry([weather]))
        result = loop.run_sync([ChatMessage.user("Weather?")], options=RunOptions(stream=stream))
    assert (result.reason, result.final_content) == (TerminationReason.COMPLETED, "Rain.")
    last = model.captured[-1].json()["messages"]
    sent = [(m.get("reasoning_content"), m["content"]) for m in last if m["role"] == "assistant"]
    assert sent == [("thought 0", ""), ("thought 1", "")]


def test_another_server_never_gets_reasoning_content_back() -> None:
    """The same turns to a server without the quirk: nothing is replayed, and DeepSeek's
    thinking mode refuses it, which is what the quirk is for."""
    model = FakeModel([[("weather", {"city": "Oslo"})], "Rain."])
    with thinking(model) as base:
        provider = create_provider("openai", model="m", base_url=base, api_key=KEY, environ={})
        loop = ToolLoop(provider, ToolRegistry([weather]))
        with pytest.raises(ProviderError) as caught:
            loop.run_sync([ChatMessage.user("Weather?")], options=RunOptions(stream=False))
    assert caught.value.status == 400
    assert "reasoning_content" not in model.captured[-1].json()["messages"][1]


# -- Mistral's reasoning models: content as a list of text and thinking chunks ------------

CHUNKED = [
    {"type": "thinking", "thinking": [{"type": "text", "text": "Oslo is "}, {"type": "text",
                                      "text": "rainy."}]},
    {"type": "text", "text": "Rain in "},
    {"type": "text", "text": "Oslo."},
]  # fmt: skip


def _chunked_stream() -> bytes:
    head: dict[str, Any] = {"id": "c1", "model": "magistral-medium-latest",
                            "object": "chat.completion.chunk"}  # fmt: skip
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": [chunk]} for chunk in CHUNKED]
    chunks = [head | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]}
              for d in deltas]  # fmt: skip
    chunks.append(head | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    usage = {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}
    chunks.append(head | {"choices": [], "usage": usage})
    return sse(chunks)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_mistral_chunked_content_is_the_answer_and_its_thinking(stream: bool) -> None:
    body = {"id": "c1", "model": "magistral-medium-latest", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": CHUNKED}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}}  # fmt: skip
    model = (_Fixed(_chunked_stream(), "text/event-stream") if stream
             else _Fixed(json.dumps(body).encode(), "application/json"))  # fmt: skip
    seen: list[Delta] = []
    request = CompletionRequest(messages=PLAIN.messages, stream=stream, on_delta=seen.append)
    with answering(model) as base:
        answer = complete(provider_at("mistral", base), request)
    assert (answer.content, answer.thinking) == ("Rain in Oslo.", "Oslo is rainy.")
    assert (answer.usage.known, answer.usage.completion_tokens) == (True, 9)
    if stream:
        assert [(d.kind, d.text) for d in seen] == [("thinking", "Oslo is rainy."),
                                                    ("content", "Rain in "),
                                                    ("content", "Oslo.")]  # fmt: skip


@pytest.mark.parametrize("name", VENDORS)
def test_openai_at_a_vendor_s_url_gets_that_vendor_s_quirks_and_price_table(name: str) -> None:
    vendor = VENDORS[name]
    provider = create_provider("openai", model=vendor.model, base_url=f"{vendor.url}/",
                               api_key=KEY, environ={})  # fmt: skip
    preset = create_provider(name, model=vendor.model, environ={vendor.key_variable: KEY})
    assert isinstance(provider, OpenAIProvider) and isinstance(preset, OpenAIProvider)
    assert (provider.quirks, provider.pricing_family) == (preset.quirks, preset.price_table)
    assert provider.trust_zone == "external_global"  # the caller's to lower, as ever
    direct = OpenAIProvider(model=vendor.model, api_key=KEY, base_url=vendor.url)
    assert direct.quirks == preset.quirks


def test_a_local_preset_s_port_is_not_known_by_its_url() -> None:
    """llama-cpp-python and vLLM share port 8000: a server there gets the common quirks."""
    provider = create_provider("openai", model="m", base_url="http://127.0.0.1:8000/v1",
                               environ={})  # fmt: skip
    assert isinstance(provider, OpenAIProvider)
    assert provider.quirks == COMPATIBLE_QUIRKS
