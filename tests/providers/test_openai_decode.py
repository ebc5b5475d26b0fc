"""OpenAI Chat Completions answers, built with the SDK's models: stop reasons, refusals, usage
breakdowns, reasoning in each server's field, and streams that decode to the same turn."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import httpx
import pytest

from toolwire import ToolCall, Usage
from toolwire.providers.base import Delta, Reasoning, Stop
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider, effort_of
from toolwire.providers.openai_stream import ChunkAssembler

from .conversation import PLAIN, REQUEST
from .servers import KEY, no_sleep
from .test_openai_sdk import chunks, completion


def provider(**kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider(model="gpt-test", api_key=KEY, **kwargs)


@pytest.mark.parametrize(
    ("finish_reason", "stop"),
    [
        ("stop", Stop.END),
        ("tool_calls", Stop.TOOL_CALLS),
        ("function_call", Stop.TOOL_CALLS),
        ("length", Stop.MAX_TOKENS),
        ("content_filter", Stop.BLOCKED),
    ],
)
def test_finish_reasons_map_to_stops_and_keep_openais_word(finish_reason: str, stop: Stop) -> None:
    response = provider().decode(completion(content="cut", finish_reason=finish_reason))
    assert (response.stop, response.finish_reason, response.refusal) == (stop, finish_reason, None)


def test_an_unknown_finish_reason_is_other_and_none_is_end_or_tool_calls() -> None:
    unknown = {"choices": [{"message": {"content": "x"}, "finish_reason": "eos"}]}
    assert provider().decode(unknown).stop is Stop.OTHER
    assert provider().decode({"choices": [{"message": {"content": "x"}}]}).stop is Stop.END
    calls = {"tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}
    assert provider().decode({"choices": [{"message": calls}]}).stop is Stop.TOOL_CALLS


def test_a_refusal_is_its_own_stop_with_the_models_words() -> None:
    body = completion(refusal="I can't help with that.", finish_reason="stop")
    response = provider().decode(body)
    assert (response.stop, response.refusal, response.content, response.finish_reason) == (
        Stop.REFUSAL,
        "I can't help with that.",
        "",
        "stop",
    )


def test_cached_and_reasoning_tokens_are_counted() -> None:
    usage = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 256, "audio_tokens": 0},
    }
    response = provider().decode(completion(content="ok", usage=usage))
    assert response.usage == Usage(
        prompt_tokens=2006, completion_tokens=300, cache_read_tokens=1920, reasoning_tokens=256
    )


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_text_from_vllm_deepseek_and_openrouter_fields(key: str) -> None:
    response = provider().decode(completion(content="4", extra={key: "2+2 is 4"}))
    assert (response.content, response.thinking) == ("4", "2+2 is 4")


def test_inline_think_blocks_become_thinking() -> None:
    response = provider().decode(completion(content="<think>2+2?</think>\n4"))
    assert (response.content, response.thinking) == ("4", "2+2?")


@pytest.mark.parametrize(
    ("reasoning", "effort"),
    [
        (Reasoning("low"), "low"),
        (Reasoning("high", budget_tokens=100), "high"),  # an effort given wins
        (Reasoning(budget_tokens=1), "low"),
        (Reasoning(budget_tokens=2047), "low"),
        (Reasoning(budget_tokens=2049), "medium"),
        (Reasoning(budget_tokens=8191), "medium"),
        (Reasoning(budget_tokens=8193), "high"),
        (Reasoning(budget_tokens=10**6), "high"),
    ],
)
def test_a_budget_maps_to_the_nearest_effort(reasoning: Reasoning, effort: str) -> None:
    assert effort_of(reasoning) == effort
    body = provider().encode(replace(PLAIN, reasoning=reasoning))
    assert body["reasoning_effort"] == effort


def test_openrouter_takes_an_effort_or_a_token_budget() -> None:
    openrouter = provider(reasoning_field="reasoning")
    effort = openrouter.encode(replace(PLAIN, reasoning=Reasoning("medium", budget_tokens=5)))
    budget = openrouter.encode(replace(PLAIN, reasoning=Reasoning(budget_tokens=3000)))
    assert (effort["reasoning"], budget["reasoning"]) == (
        {"effort": "medium"},
        {"max_tokens": 3000},
    )
    assert "reasoning_effort" not in effort | budget


def test_tool_choice_is_always_sent_with_tools_and_only_with_tools() -> None:
    assert provider().encode(REQUEST)["tool_choice"] == "auto"
    assert provider().encode(replace(REQUEST, tool_choice="none"))["tool_choice"] == "none"
    assert "tool_choice" not in provider().encode(PLAIN)
    assert "tool_choice" not in provider().encode(replace(PLAIN, tool_choice="none"))


def test_a_streamed_request_asks_for_usage_unless_the_server_cannot() -> None:
    streamed = replace(PLAIN, stream=True)
    assert provider().encode(streamed) == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "Hello"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert "stream_options" not in provider(stream_usage=False).encode(streamed)


# --- streams -------------------------------------------------------------------------------

TURNS = {
    "text": completion(content="It is 4.", extra={"reasoning_content": "2+2 = 4"}),
    "calls": completion(
        content="Checking.",
        calls=[("call_1", "weather", '{"city": "Oslo"}'), ("call_2", "add", '{"a": 2, "b": 2}')],
        finish_reason="tool_calls",
        usage={
            "prompt_tokens": 90,
            "completion_tokens": 40,
            "total_tokens": 130,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 12},
        },
    ),
    "refusal": completion(refusal="I won't do that."),
    "openrouter": completion(content="4", extra={"reasoning": "adding"}, finish_reason="length"),
    "inline": completion(content="<think>add them</think>The answer is 4."),
}


def assembled(events: list[dict[str, Any]], sink: Any = None) -> dict[str, Any]:
    assembler = ChunkAssembler(sink)
    for event in events:
        assembler.feed("", event)
    return assembler.body()


@pytest.mark.parametrize("turn", TURNS)
@pytest.mark.parametrize("pieces", [1, 3, 50])
def test_a_streamed_turn_decodes_to_the_same_response(turn: str, pieces: int) -> None:
    whole = provider().decode(TURNS[turn])
    assert provider().decode(assembled(chunks(TURNS[turn], pieces))) == whole


def test_streaming_over_http_equals_the_whole_call_and_shows_deltas() -> None:
    body = TURNS["calls"]
    events = [*chunks(body), {"choices": []}]  # a server may send an empty chunk, too
    stream = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    seen: list[Delta] = []

    def handle(request: httpx.Request) -> httpx.Response:
        asked = json.loads(request.content)
        if asked.get("stream"):
            headers = {"content-type": "text/event-stream"}
            return httpx.Response(200, content=stream.encode(), headers=headers)
        return httpx.Response(200, json=body)

    adapter = provider(http=HttpSettings(transport=httpx.MockTransport(handle), sleep=no_sleep))
    streamed = asyncio.run(adapter.complete(replace(PLAIN, stream=True, on_delta=seen.append)))
    whole = asyncio.run(adapter.complete(PLAIN))
    assert streamed == whole
    assert streamed.tool_calls == (
        ToolCall("call_1", "weather", '{"city": "Oslo"}'),
        ToolCall("call_2", "add", '{"a": 2, "b": 2}'),
    )
    assert streamed.usage == Usage(90, 40, cache_read_tokens=64, reasoning_tokens=12)
    assert seen == [Delta("content", "Che"), Delta("content", "cki"), Delta("content", "ng.")]


def test_reasoning_and_think_blocks_stream_as_thinking_deltas() -> None:
    seen: list[Delta] = []
    assembled(chunks(TURNS["text"], 2), seen.append)
    assert seen == [
        Delta("thinking", "2+2 "),
        Delta("thinking", "= 4"),
        Delta("content", "It i"),
        Delta("content", "s 4."),
    ]
    seen.clear()
    assembled(chunks(TURNS["inline"], 7), seen.append)
    shown = {
        kind: "".join(d.text for d in seen if d.kind == kind) for kind in ("thinking", "content")
    }
    assert shown == {"thinking": "add them", "content": "The answer is 4."}


def test_tool_call_deltas_without_an_index_start_a_new_call_per_id() -> None:
    def call(**delta: Any) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": {"tool_calls": [delta]}}]}

    events = [
        call(id="a", function={"name": "add", "arguments": '{"a":'}),
        call(function={"arguments": " 1}"}),
        call(id="b", function={"name": "clock", "arguments": "{}"}),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    response = provider().decode(assembled(events))
    assert response.tool_calls == (ToolCall("a", "add", '{"a": 1}'), ToolCall("b", "clock", "{}"))
    # the stream had no usage chunk: the usage is not known, not zero
    assert (response.stop, response.usage) == (Stop.TOOL_CALLS, Usage(known=False))


def test_a_stream_without_choices_is_a_malformed_response() -> None:
    from toolwire.core.errors import MalformedResponse

    with pytest.raises(MalformedResponse, match="openai: response has no choices"):
        provider().decode(assembled([{"choices": [], "usage": {"prompt_tokens": 1}}]))
