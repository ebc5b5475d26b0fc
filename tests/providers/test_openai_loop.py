"""The OpenAI-compatible adapter drives whole runs through ToolLoop over real loopback HTTP, each
answer built with the SDK's models and each request checked against the SDK's request types:
two parallel calls in one turn, one of them an error, reasoning on, and the synthesis round at
the cap, streamed and whole. Keyless local servers, presets, and errors inside 200 answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from toolwire import ChatMessage, ToolLoop, ToolRegistry, ToolResult, tool
from toolwire.core.errors import ProviderError, ServerError
from toolwire.loop.loop import RunOptions, TerminationReason
from toolwire.policy.trace import RunTrace
from toolwire.providers.base import Delta, Reasoning, Usage
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.select import create_provider

from .conversation import PLAIN
from .servers import KEY, Captured, FakeModel, loopback, no_sleep, sse
from .test_openai_sdk import checked, chunks, completion


@tool(group="demo", data_class="public")
def weather(city: str) -> ToolResult:
    """Current weather for a city."""
    return ToolResult.text(f"{city}: 3°C, rain")


@tool(group="demo", data_class="public")
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 20,
    "total_tokens": 120,
    "prompt_tokens_details": {"cached_tokens": 64},
    "completion_tokens_details": {"reasoning_tokens": 8},
}
TURNS = [
    completion(
        calls=[("call_w", "weather", '{"city": "Oslo"}'), ("call_a", "add", '{"a": 2, "b":')],
        finish_reason="tool_calls",
        usage=USAGE,
        extra={"reasoning_content": "Two look-ups at once."},
    ),
    completion(
        content="One more.",
        calls=[("call_b", "weather", '{"city": "Bergen"}')],
        finish_reason="tool_calls",
        usage=USAGE,
        extra={"reasoning_content": "Bergen too."},
    ),
    completion(content="Oslo and Bergen: rain.", usage=USAGE, extra={"reasoning_content": "Done."}),
]
ADD_ERROR = 'Error: arguments for tool "add" must be a JSON object; the text sent was not one.'


@dataclass(slots=True)
class SdkModel(FakeModel):
    """Plays SDK-built ``chat.completion`` bodies, whole or as SDK-built chunks."""

    plays: Sequence[dict[str, Any]] = ()
    events: list[list[dict[str, Any]]] = field(default_factory=list)

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        self.captured.append(Captured(path, headers, body))
        request = json.loads(body)
        reply = self.plays[sum(1 for m in request["messages"] if m["role"] == "assistant")]
        if not request.get("stream"):
            return json.dumps(reply).encode(), "application/json"
        events = chunks(reply)
        if not request.get("stream_options", {}).get("include_usage"):
            events = [e for e in events if e["choices"]]
        self.events.append(events)
        return sse(events), "text/event-stream"


def run(base: str, stream: bool, **kwargs: Any) -> tuple[Any, list[tuple[int, Delta]]]:
    seen: list[tuple[int, Delta]] = []
    provider = OpenAIProvider(model="gpt-test", base_url=f"{base}/v1", http=HttpSettings(
        sleep=no_sleep, timeout=10), **kwargs)  # fmt: skip
    options = RunOptions(max_rounds=2, stream=stream, reasoning=Reasoning("low"))
    loop = ToolLoop(provider, ToolRegistry([weather, add]))
    trace = RunTrace(delta_observers=[lambda r, d: seen.append((r, d))])
    result = loop.run_sync([ChatMessage.user("Weather?")], options=options, trace=trace)
    return result, seen


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_three_rounds_with_parallel_calls_an_error_reasoning_and_the_synthesis(
    stream: bool,
) -> None:
    model = SdkModel(plays=TURNS)
    with loopback(model) as base:
        result, seen = run(base, stream, api_key=KEY)
    assert (result.final_content, result.reason, result.truncated) == (
        "Oslo and Bergen: rain.",
        TerminationReason.MAX_ITERATIONS,
        True,
    )
    assert [(i.name, i.is_error, i.result) for i in result.trace] == [
        ("weather", False, "Oslo: 3°C, rain"),
        ("add", True, ADD_ERROR),
        ("weather", False, "Bergen: 3°C, rain"),
    ]
    assert result.usage == Usage(300, 60, cache_read_tokens=192, reasoning_tokens=24)
    bodies = [c.json() for c in model.captured]
    for body in bodies:
        checked(body)
        assert body["reasoning_effort"] == "low"
        assert body.get("stream", False) is stream
        assert [t["function"]["name"] for t in body["tools"]] == ["weather", "add"]
    assert [b.get("tool_choice") for b in bodies] == ["auto", "auto", "none"]
    # the broken arguments go back as {}, the error result as the tool turn's content
    assert bodies[1]["messages"][1]["tool_calls"][1]["function"]["arguments"] == "{}"
    assert bodies[1]["messages"][3] == {"role": "tool", "tool_call_id": "call_a",
                                        "content": ADD_ERROR}  # fmt: skip
    assert all(c.headers["authorization"] == f"Bearer {KEY}" for c in model.captured)
    if stream:
        assert "".join(d.text for r, d in seen if (r, d.kind) == (3, "content")) == (
            "Oslo and Bergen: rain."
        )
        assert [d.text for r, d in seen if d.kind == "thinking" and r == 1] == [
            "Two loo", "k-ups a", "t once."
        ]  # fmt: skip
    else:
        assert seen == []


def test_a_streamed_run_equals_the_same_run_whole() -> None:
    whole_model, streamed_model = SdkModel(plays=TURNS), SdkModel(plays=TURNS)
    with loopback(whole_model) as base:
        whole, _ = run(base, False, api_key=KEY)
    with loopback(streamed_model) as base:
        streamed, _ = run(base, True, api_key=KEY)
    assert (streamed.final_content, streamed.trace, streamed.usage, streamed.stop) == (
        whole.final_content,
        whole.trace,
        whole.usage,
        whole.stop,
    )
    # what the model was sent differs only by the stream fields
    unstreamed = [
        {k: v for k, v in c.json().items() if k not in ("stream", "stream_options")}
        for c in streamed_model.captured
    ]
    assert unstreamed == [c.json() for c in whole_model.captured]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_server_without_a_key_gets_no_authorization_header(host: str) -> None:
    model = SdkModel(plays=TURNS)
    with loopback(model) as base:
        result, _ = run(base.replace("127.0.0.1", host), True)
    assert result.final_content == "Oslo and Bergen: rain."
    assert [("authorization" in c.headers) for c in model.captured] == [False, False, False]


@pytest.mark.parametrize("name", ["ollama", "vllm", "lmstudio"])
def test_local_presets_run_without_a_key_and_send_max_tokens(name: str) -> None:
    model = SdkModel(plays=[completion(content="hi")])
    with loopback(model) as base:
        provider = create_provider(name, model="qwen3", base_url=f"{base}/v1", environ={})
        assert isinstance(provider, OpenAIProvider)
        request = replace(PLAIN, max_tokens=64, stream=True)
        response = asyncio.run(provider.complete(request))
    body = model.captured[0].json()
    checked(body)
    assert (response.content, provider.name, provider.trust_zone) == ("hi", name, "local")
    assert (body["max_tokens"], "max_completion_tokens" in body) == (64, False)
    assert "authorization" not in model.captured[0].headers


class _Raw(FakeModel):
    """Answers every request with the same bytes."""

    __slots__ = ("content", "kind")

    def __init__(self, content: bytes, kind: str) -> None:
        super().__init__()
        self.content, self.kind = content, kind

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        self.captured.append(Captured(path, headers, body))
        return self.content, self.kind


def test_an_openrouter_style_error_in_a_200_body_is_a_typed_error() -> None:
    error = {"error": {"code": 502, "message": "Upstream provider unavailable"}}
    model = _Raw(json.dumps(error).encode(), "application/json")
    with loopback(model) as base:
        provider = OpenAIProvider(model="m", api_key=KEY, base_url=base, http=HttpSettings(
            sleep=no_sleep, max_attempts=2))  # fmt: skip
        with pytest.raises(ServerError) as caught:
            asyncio.run(provider.complete(PLAIN))
    assert str(caught.value) == (
        f"openai: error in the response (502) ({base}/chat/completions) [code 502]: "
        "Upstream provider unavailable"
    )
    assert len(model.captured) == 2  # a 5xx code is transient: retried


def test_an_error_event_mid_stream_is_a_typed_error_and_not_retried() -> None:
    first = chunks(completion(content="partial answer"))[:3]
    error = {"error": {"code": 502, "message": "Upstream provider unavailable"}}
    model = _Raw(sse([*first, error]), "text/event-stream")
    seen: list[Delta] = []
    with loopback(model) as base:
        provider = OpenAIProvider(model="m", api_key=KEY, base_url=base, http=HttpSettings(
            sleep=no_sleep, max_attempts=4))  # fmt: skip
        with pytest.raises(ProviderError) as caught:
            asyncio.run(provider.complete(replace(PLAIN, stream=True, on_delta=seen.append)))
    assert str(caught.value) == (
        f"openai: error in the response (502) ({base}/chat/completions) [code 502]: "
        "Upstream provider unavailable"
    )
    assert len(model.captured) == 1  # part of the answer was shown: never asked again
    assert seen == [Delta("content", "parti"), Delta("content", "al an")]


def test_a_stream_over_the_byte_cap_is_refused_while_it_is_read() -> None:
    from toolwire.core.errors import MalformedResponse
    from toolwire.providers.http import MAX_RESPONSE_BYTES

    piece = chunks(completion(content="x" * 60_000), pieces=1)[1]
    events = [piece] * (MAX_RESPONSE_BYTES // 60_000 + 1)
    model = _Raw(sse(events), "text/event-stream")
    with loopback(model) as base:
        provider = OpenAIProvider(model="m", api_key=KEY, base_url=base, http=HttpSettings(
            sleep=no_sleep))  # fmt: skip
        with pytest.raises(MalformedResponse) as caught:
            asyncio.run(provider.complete(replace(PLAIN, stream=True)))
    assert str(caught.value) == (
        f"openai: event stream over {MAX_RESPONSE_BYTES} bytes in all (MAX_STREAM_BYTES) "
        f"({base}/chat/completions)"
    )
    assert len(model.captured) == 1
