"""Gemini generateContent: request bodies field by field, and parsing of real-shaped answers."""

from __future__ import annotations

import re
from typing import Any

import pytest

from toolwire import ToolCall, Usage
from toolwire.errors import MalformedResponse
from toolwire.providers.gemini import GeminiProvider

from .conversation import ADD_ERROR, ADD_SCHEMA, PLAIN, REQUEST, WEATHER_SCHEMA
from .servers import KEY

SYNTHETIC_ID = re.compile(r"^call_[0-9a-f]{24}$")


def provider() -> GeminiProvider:
    return GeminiProvider(model="models/gemini-test", api_key=KEY)


def test_the_key_is_a_header_and_the_model_is_in_the_path() -> None:
    adapter = provider()
    assert adapter.url() == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-test:generateContent"
    )
    assert adapter.headers(KEY) == {"x-goog-api-key": KEY}
    assert KEY not in repr(adapter)


def test_multi_round_tool_conversation_encodes_to_the_documented_shape() -> None:
    assert provider().encode(REQUEST) == {
        "systemInstruction": {"parts": [{"text": "You are terse.\n\nAnswer in English."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Oslo, and 2+2?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Checking."},
                    {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
                    {"functionCall": {"name": "add", "args": {}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "weather",
                            "response": {"result": 'Oslo: 3°C, "rain"'},
                        }
                    },
                    {"functionResponse": {"name": "add", "response": {"result": ADD_ERROR}}},
                ],
            },
            {"role": "model", "parts": [{"functionCall": {"name": "clock", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "clock", "response": {"time": "12:00"}}}],
            },
            {"role": "user", "parts": [{"text": "Thanks."}]},
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "weather",
                        "description": "Current weather for a city.",
                        "parametersJsonSchema": WEATHER_SCHEMA,
                    },
                    {
                        "name": "add",
                        "description": "Add two integers.",
                        "parametersJsonSchema": ADD_SCHEMA,
                    },
                ]
            }
        ],
        "generationConfig": {"maxOutputTokens": 512, "temperature": 0.2},
    }


def test_plain_request_has_no_tools_and_no_system_instruction() -> None:
    assert provider().encode(PLAIN) == {
        "contents": [{"role": "user", "parts": [{"text": "Hello"}]}],
        "generationConfig": {"maxOutputTokens": 4096},
    }


def test_several_calls_get_unique_synthesised_ids() -> None:
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Thinking it over", "thought": True},
                        {"text": "On it."},
                        {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
                        {"functionCall": {"name": "weather", "args": {"city": "Bergen"}}},
                        {"functionCall": {"name": "clock"}},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 90, "candidatesTokenCount": 12},
        "modelVersion": "gemini-test-002",
    }
    response = provider().decode(body)
    assert response.content == "On it."
    assert response.thinking == "Thinking it over"
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("weather", '{"city":"Oslo"}'),
        ("weather", '{"city":"Bergen"}'),
        ("clock", "{}"),
    ]
    ids = [c.id for c in response.tool_calls]
    assert all(SYNTHETIC_ID.match(i) for i in ids)
    assert len(set(ids)) == 3
    assert response.usage == Usage(90, 12)
    assert (response.finish_reason, response.model) == ("stop", "gemini-test-002")


def test_ids_stay_unique_across_rounds() -> None:
    body = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "clock"}}]}}]}
    ids = {provider().decode(body).tool_calls[0].id for _ in range(200)}
    assert len(ids) == 200


def test_a_call_id_given_by_the_api_is_kept() -> None:
    part = {"functionCall": {"id": "fc-7", "name": "clock", "args": {}}}
    response = provider().decode({"candidates": [{"content": {"parts": [part]}}]})
    assert response.tool_calls == (ToolCall("fc-7", "clock", "{}"),)


@pytest.mark.parametrize(
    ("reason", "mapped"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "MALFORMED_FUNCTION_CALL"),
        (None, None),
    ],
)
def test_finish_reasons(reason: Any, mapped: Any) -> None:
    body = {"candidates": [{"content": {"parts": []}, "finishReason": reason}]}
    response = provider().decode(body)
    assert (response.finish_reason, response.content, response.usage) == (mapped, "", Usage())


def test_a_blocked_prompt_is_a_filtered_empty_answer() -> None:
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 5}}
    response = provider().decode(body)
    assert (response.content, response.finish_reason, response.usage) == (
        "",
        "content_filter",
        Usage(5, 0),
    )


def test_no_candidates_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match=r"^gemini: response has no candidates$"):
        provider().decode({"candidates": []})
