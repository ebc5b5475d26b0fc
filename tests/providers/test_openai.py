"""OpenAI Chat Completions: request bodies field by field, and parsing of real-shaped answers."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from typing import Any

import httpx

from toolwire import ToolCall, Usage
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider

from .conversation import ADD_ERROR, ADD_SCHEMA, PLAIN, REQUEST, WEATHER_SCHEMA
from .servers import KEY

SYNTHETIC_ID = re.compile(r"^call_[0-9a-f]{24}$")


def provider(**kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider(model="gpt-test", api_key=KEY, **kwargs)


def test_multi_round_tool_conversation_encodes_to_the_documented_shape() -> None:
    assert provider().encode(REQUEST) == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "system", "content": "Answer in English."},
            {"role": "user", "content": "Weather in Oslo, and 2+2?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                    },
                    {
                        # broken arguments go back as {}: servers that parse the history
                        # (vLLM, llama.cpp) refuse every later turn that replays them
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "add", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": 'Oslo: 3°C, "rain"'},
            {"role": "tool", "tool_call_id": "call_b", "content": ADD_ERROR},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_c",
                        "type": "function",
                        "function": {"name": "clock", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_c", "content": '{"time": "12:00"}'},
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Current weather for a city.",
                    "parameters": WEATHER_SCHEMA,
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "add",
                    "description": "Add two integers.",
                    "parameters": ADD_SCHEMA,
                },
            },
        ],
        "tool_choice": "auto",
        "temperature": 0.2,
        "max_completion_tokens": 512,
    }


def test_a_request_without_tools_has_no_tools_key() -> None:
    body = provider(max_tokens_field="max_tokens").encode(PLAIN)
    assert body == {"model": "gpt-test", "messages": [{"role": "user", "content": "Hello"}]}


def test_answer_with_several_tool_calls_keeps_argument_text_verbatim() -> None:
    body = {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "model": "gpt-test-2025",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{ "city" : "Oslo" }'},
                        },
                        {
                            "id": "call_2",
                            "type": "function",
                            "function": {"name": "clock", "arguments": ""},
                        },
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 31, "total_tokens": 151},
    }
    response = provider().decode(body)
    assert response.content == ""
    assert response.tool_calls == (
        ToolCall("call_1", "weather", '{ "city" : "Oslo" }'),
        ToolCall("call_2", "clock", ""),
    )
    assert response.tool_calls[1].decoded_arguments() == {}
    assert response.usage == Usage(120, 31)
    assert response.finish_reason == "tool_calls"
    assert response.model == "gpt-test-2025"
    assert response.thinking is None
    assert response.raw is None


def test_missing_usage_unknown_finish_reason_and_inline_thinking() -> None:
    body = {
        "choices": [
            {
                "message": {"content": "<think>Is it 4?</think>\nIt is 4."},
                "finish_reason": "eos_token",
            }
        ]
    }
    response = provider().decode(body)
    assert (response.content, response.thinking) == ("It is 4.", "Is it 4?")
    assert response.usage == Usage(0, 0, known=False)  # none reported: "tokens unknown"
    assert response.finish_reason == "eos_token"
    assert response.model is None


def test_reasoning_content_becomes_thinking() -> None:
    body = {"choices": [{"message": {"content": "4", "reasoning_content": "2+2"}}]}
    response = provider().decode(body)
    assert (response.content, response.thinking, response.finish_reason) == ("4", "2+2", None)


def test_malformed_calls_get_an_id_an_empty_name_or_keep_raw_text() -> None:
    body = {
        "choices": [
            {
                "message": {
                    "content": "",
                    "tool_calls": [
                        {"function": {"name": "add", "arguments": "{}"}},
                        {"function": {"name": "add", "arguments": "{}"}},
                        {"id": "x", "function": {"arguments": "not json"}},
                        "garbage",
                        {"id": "y", "function": {"name": "add", "arguments": {"a": 1}}},
                    ],
                }
            }
        ]
    }
    calls = provider().decode(body).tool_calls
    assert [SYNTHETIC_ID.match(c.id) is not None for c in calls[:2]] == [True, True]
    assert calls[0].id != calls[1].id
    assert calls[2] == ToolCall("x", "", "not json")
    assert (calls[3].name, calls[3].arguments) == ("", "{}")
    assert calls[4] == ToolCall("y", "add", '{"a":1}')


def test_raw_body_only_when_capture_is_asked() -> None:
    body = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=body))
    adapter = provider(http=HttpSettings(transport=transport))
    captured = asyncio.run(adapter.complete(_with_capture(True)))
    plain = asyncio.run(adapter.complete(_with_capture(False)))
    assert captured.raw == body
    assert plain.raw is None
    assert (captured.content, plain.content) == ("hi", "hi")


def _with_capture(capture: bool) -> Any:
    return replace(PLAIN, capture_raw=capture)
