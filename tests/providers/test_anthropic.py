"""Anthropic Messages: request bodies field by field, and parsing of real-shaped answers."""

from __future__ import annotations

import re
from typing import Any

import pytest

from toolwire import ToolCall, Usage
from toolwire.errors import MalformedResponse
from toolwire.providers.anthropic import AnthropicProvider

from .conversation import ADD_ERROR, ADD_SCHEMA, PLAIN, REQUEST, WEATHER_SCHEMA
from .servers import KEY

SYNTHETIC_ID = re.compile(r"^call_[0-9a-f]{24}$")


def provider() -> AnthropicProvider:
    return AnthropicProvider(model="claude-test", api_key=KEY)


def test_multi_round_tool_conversation_encodes_to_the_documented_shape() -> None:
    assert provider().encode(REQUEST) == {
        "model": "claude-test",
        "max_tokens": 512,
        "system": "You are terse.\n\nAnswer in English.",
        "messages": [
            {"role": "user", "content": "Weather in Oslo, and 2+2?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "call_a",
                        "name": "weather",
                        "input": {"city": "Oslo"},
                    },
                    {"type": "tool_use", "id": "call_b", "name": "add", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_a",
                        "content": 'Oslo: 3°C, "rain"',
                        "is_error": False,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_b",
                        "content": ADD_ERROR,
                        "is_error": True,
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "call_c", "name": "clock", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_c",
                        "content": '{"time": "12:00"}',
                        "is_error": False,
                    }
                ],
            },
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [
            {
                "name": "weather",
                "description": "Current weather for a city.",
                "input_schema": WEATHER_SCHEMA,
            },
            {"name": "add", "description": "Add two integers.", "input_schema": ADD_SCHEMA},
        ],
        "temperature": 0.2,
    }


def test_plain_request_has_default_max_tokens_and_no_tools_or_system() -> None:
    assert provider().encode(PLAIN) == {
        "model": "claude-test",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "Hello"}],
    }


def test_text_thinking_and_several_tool_uses() -> None:
    body = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-2025",
        "content": [
            {"type": "thinking", "thinking": "Need both.", "signature": "sig"},
            {"type": "text", "text": "Let me "},
            {"type": "text", "text": "check."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "toolu_2", "name": "clock", "input": {}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 210, "output_tokens": 44},
    }
    response = provider().decode(body)
    assert response.content == "Let me check."
    assert response.thinking == "Need both."
    assert response.tool_calls == (
        ToolCall("toolu_1", "weather", '{"city":"Oslo"}'),
        ToolCall("toolu_2", "clock", "{}"),
    )
    assert response.usage == Usage(210, 44)
    assert (response.finish_reason, response.model) == ("tool_calls", "claude-test-2025")


@pytest.mark.parametrize(
    ("stop", "mapped"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "refusal"),
        (None, None),
    ],
)
def test_stop_reasons_map_or_pass_through(stop: Any, mapped: Any) -> None:
    response = provider().decode({"content": [], "stop_reason": stop})
    assert (response.finish_reason, response.content, response.usage) == (mapped, "", Usage())


def test_malformed_tool_uses_get_an_id_an_empty_name_or_keep_raw_text() -> None:
    body = {
        "content": [
            {"type": "tool_use", "name": "add", "input": {"a": 1}},
            {"type": "tool_use", "id": "t2", "input": "{oops"},
            "garbage",
        ]
    }
    calls = provider().decode(body).tool_calls
    assert SYNTHETIC_ID.match(calls[0].id)
    assert (calls[0].name, calls[0].arguments) == ("add", '{"a":1}')
    assert calls[1] == ToolCall("t2", "", "{oops")
    assert len(calls) == 2


def test_a_body_without_content_blocks_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match=r"^anthropic: response has no content blocks$"):
        provider().decode({"type": "error", "error": {"message": "overloaded"}})
