"""Gemini generateContent: request bodies field by field, and parsing of real-shaped answers."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from google.genai import types

from toolwire import ChatMessage, CompletionRequest, ToolCall, Usage
from toolwire.core.errors import MalformedResponse
from toolwire.core.messages import ProviderState
from toolwire.providers.base import Reasoning, Stop
from toolwire.providers.gemini import GeminiProvider

from .conversation import ADD_ERROR, ADD_SCHEMA, PLAIN, REQUEST, TOOLS, WEATHER_SCHEMA
from .servers import KEY
from .test_gemini_sdk import call, dump, response, said, validate_request

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
                            "response": {"output": 'Oslo: 3°C, "rain"'},
                        }
                    },
                    {"functionResponse": {"name": "add", "response": {"error": ADD_ERROR}}},
                ],
            },
            {"role": "model", "parts": [{"functionCall": {"name": "clock", "args": {}}}]},
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "clock",
                            "response": {"output": {"time": "12:00"}},
                        }
                    }
                ],
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
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"maxOutputTokens": 512, "temperature": 0.2},
    }


def test_plain_request_has_no_tools_and_no_system_instruction() -> None:
    assert provider().encode(PLAIN) == {
        "contents": [{"role": "user", "parts": [{"text": "Hello"}]}],
        "generationConfig": {"maxOutputTokens": 4096},
    }


def test_thoughts_calls_and_state_from_an_sdk_built_turn() -> None:
    body = response(
        [
            said("Weighing Oslo.", thought=True),
            said("On it."),
            call("weather", {"city": "Oslo"}, sig=1),
            call("weather", {"city": "Bergen"}),
            types.Part(function_call=types.FunctionCall(name="clock")),
        ]
    )
    decoded = provider().decode(body)
    assert decoded.content == "On it."
    assert decoded.thinking == "Weighing Oslo."
    assert [(c.name, c.arguments) for c in decoded.tool_calls] == [
        ("weather", '{"city":"Oslo"}'),
        ("weather", '{"city":"Bergen"}'),
        ("clock", "{}"),
    ]
    ids = [c.id for c in decoded.tool_calls]
    assert all(SYNTHETIC_ID.match(i) for i in ids)
    assert len(set(ids)) == 3
    assert (decoded.stop, decoded.finish_reason, decoded.model) == (
        Stop.TOOL_CALLS,
        "STOP",
        "gemini-3-pro-preview",
    )
    assert decoded.provider_state == ProviderState(
        "gemini", {"parts": body["candidates"][0]["content"]["parts"]}
    )


def test_ids_stay_unique_across_rounds() -> None:
    body = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "clock"}}]}}]}
    ids = {provider().decode(body).tool_calls[0].id for _ in range(200)}
    assert len(ids) == 200


def test_a_call_id_given_by_the_api_is_kept() -> None:
    body = response([call("clock", {}, id="fc-7")])
    assert provider().decode(body).tool_calls == (ToolCall("fc-7", "clock", "{}"),)


def test_usage_counts_thoughts_as_output_and_cache_reads_as_input() -> None:
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=120, cached_content_token_count=100, candidates_token_count=30,
        thoughts_token_count=250, total_token_count=400,
    )  # fmt: skip
    decoded = provider().decode(response([said("Hi.")], usage=usage))
    assert decoded.usage == Usage(
        prompt_tokens=120, completion_tokens=280, cache_read_tokens=100, reasoning_tokens=250
    )
    assert decoded.usage.total_tokens == 400


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("STOP", Stop.END),
        ("MAX_TOKENS", Stop.MAX_TOKENS),
        ("SAFETY", Stop.BLOCKED),
        ("RECITATION", Stop.BLOCKED),
        ("BLOCKLIST", Stop.BLOCKED),
        ("PROHIBITED_CONTENT", Stop.BLOCKED),
        ("SPII", Stop.BLOCKED),
        ("MALFORMED_FUNCTION_CALL", Stop.MALFORMED_CALL),
        ("LANGUAGE", Stop.OTHER),
        ("OTHER", Stop.OTHER),
        (None, Stop.END),
    ],
)
def test_finish_reasons_map_to_stops_and_keep_gemini_s_word(reason: Any, stop: Stop) -> None:
    decoded = provider().decode(response([said("Partial")], finish=reason))
    assert (decoded.stop, decoded.finish_reason, decoded.content) == (stop, reason, "Partial")
    assert decoded.refusal == (reason if stop is Stop.BLOCKED else None)


def test_a_blocked_answer_gives_the_finish_message_as_refusal() -> None:
    body = response([], finish="SAFETY", finish_message="Harm category: dangerous content.")
    decoded = provider().decode(body)
    assert (decoded.stop, decoded.refusal, decoded.content) == (
        Stop.BLOCKED,
        "SAFETY: Harm category: dangerous content.",
        "",
    )


def test_a_malformed_function_call_turn_has_no_calls() -> None:
    message = "Malformed function call: print(default_api.add(a=2, b=))"
    body = response([], finish="MALFORMED_FUNCTION_CALL", finish_message=message)
    decoded = provider().decode(body)
    assert (decoded.stop, decoded.tool_calls, decoded.refusal) == (Stop.MALFORMED_CALL, (), None)


@pytest.mark.parametrize(
    ("feedback", "refusal"),
    [
        (
            types.GenerateContentResponsePromptFeedback(block_reason=types.BlockedReason.SAFETY),
            "SAFETY",
        ),
        (
            types.GenerateContentResponsePromptFeedback(
                block_reason=types.BlockedReason.PROHIBITED_CONTENT,
                block_reason_message="Prompt was blocked.",
            ),
            "PROHIBITED_CONTENT: Prompt was blocked.",
        ),
    ],
)
def test_a_blocked_prompt_is_blocked_and_names_its_reason(
    feedback: types.GenerateContentResponsePromptFeedback, refusal: str
) -> None:
    body = dump(
        types.GenerateContentResponse(
            prompt_feedback=feedback,
            usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=5),
        )
    )
    decoded = provider().decode(body)
    assert (decoded.content, decoded.stop, decoded.refusal, decoded.usage) == (
        "",
        Stop.BLOCKED,
        refusal,
        Usage(5, 0),
    )
    assert decoded.finish_reason == feedback.block_reason


def test_no_candidates_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match=r"^gemini: response has no candidates$"):
        provider().decode({"candidates": []})


# Replaying a turn: thought signatures, ids, results.


def turn_after(body: dict[str, Any], *results: ChatMessage) -> CompletionRequest:
    decoded = provider().decode(body)
    assistant = ChatMessage.assistant(decoded.content, decoded.tool_calls, decoded.provider_state)
    return CompletionRequest(messages=(ChatMessage.user("Go."), assistant, *results), tools=TOOLS)


def test_a_turn_is_replayed_verbatim_with_its_signatures_and_api_ids() -> None:
    body = response(
        [
            said("Planning.", thought=True),
            said("Both."),
            call("weather", {"city": "Oslo"}, id="fc-1", sig=1),
            call("add", {"a": 2, "b": 2}, id="fc-2"),
        ]
    )
    request = turn_after(
        body,
        ChatMessage.tool_result("fc-1", "Oslo: rain"),
        ChatMessage.tool_result("fc-2", "bad", is_error=True),
    )
    encoded = provider().encode(request)
    validate_request(encoded)
    assert encoded["contents"][1] == {
        "role": "model",
        "parts": body["candidates"][0]["content"]["parts"],
    }
    assert encoded["contents"][2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "fc-1", "name": "weather",
                                  "response": {"output": "Oslo: rain"}}},
            {"functionResponse": {"id": "fc-2", "name": "add", "response": {"error": "bad"}}},
        ],
    }  # fmt: skip


def test_synthesised_ids_never_go_on_the_wire() -> None:
    body = response([call("clock", {}, sig=4)])
    decoded = provider().decode(body)
    (clock,) = decoded.tool_calls
    assistant = ChatMessage.assistant("", decoded.tool_calls, decoded.provider_state)
    messages = (ChatMessage.user("x"), assistant, ChatMessage.tool_result(clock.id, "12:00"))
    encoded = provider().encode(CompletionRequest(messages=messages))
    assert encoded["contents"][1]["parts"] == body["candidates"][0]["content"]["parts"]
    assert encoded["contents"][2]["parts"] == [
        {"functionResponse": {"name": "clock", "response": {"output": "12:00"}}}
    ]
    assert clock.id not in json.dumps(encoded)


def test_another_family_s_state_is_never_sent() -> None:
    state = ProviderState("anthropic", {"blocks": [{"type": "thinking", "signature": "s"}]})
    message = ChatMessage.assistant("Hi.", (), state)
    encoded = provider().encode(CompletionRequest(messages=(ChatMessage.user("x"), message)))
    assert encoded["contents"][1] == {"role": "model", "parts": [{"text": "Hi."}]}


def test_a_state_that_no_longer_matches_the_turn_is_not_replayed() -> None:
    body = response([call("weather", {"city": "Oslo"}, sig=1)])
    decoded = provider().decode(body)
    edited = ChatMessage.assistant("", (ToolCall("x", "add", "{}"),), decoded.provider_state)
    encoded = provider().encode(CompletionRequest(messages=(ChatMessage.user("x"), edited)))
    assert encoded["contents"][1]["parts"] == [{"functionCall": {"name": "add", "args": {}}}]


def test_replayed_args_that_are_not_an_object_go_back_as_empty() -> None:
    state = ProviderState("gemini", {"parts": [{"functionCall": {"name": "add", "args": [1]}}]})
    message = ChatMessage.assistant("", (ToolCall("x", "add", "[1]"),), state)
    encoded = provider().encode(CompletionRequest(messages=(ChatMessage.user("x"), message)))
    assert encoded["contents"][1]["parts"] == [{"functionCall": {"name": "add", "args": {}}}]


@pytest.mark.parametrize(
    ("content", "sent"),
    [
        ('{"rows": [1, 2]}', {"rows": [1, 2]}),
        ("[1, 2]", "[1, 2]"),
        ('{"broken": ', '{"broken": '),
        ('{"x": NaN}', '{"x": NaN}'),
        ("plain", "plain"),
    ],
)
def test_a_success_goes_under_output_decoded_only_when_it_is_a_json_object(
    content: str, sent: Any
) -> None:
    messages = (
        ChatMessage.user("x"),
        ChatMessage.assistant("", (ToolCall("c", "add", "{}"),)),
        ChatMessage.tool_result("c", content),
    )
    encoded = provider().encode(CompletionRequest(messages=messages))
    assert encoded["contents"][2]["parts"][0]["functionResponse"]["response"] == {"output": sent}


# Synthesis and reasoning.


def test_choice_none_sends_the_tools_with_mode_none() -> None:
    request = CompletionRequest(messages=REQUEST.messages, tools=TOOLS, tool_choice="none")
    encoded = provider().encode(request)
    assert encoded["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    assert [d["name"] for d in encoded["tools"][0]["functionDeclarations"]] == ["weather", "add"]
    validate_request(encoded)


def test_choice_none_without_tools_sends_neither() -> None:
    encoded = provider().encode(CompletionRequest(messages=PLAIN.messages, tool_choice="none"))
    assert "toolConfig" not in encoded and "tools" not in encoded


@pytest.mark.parametrize(
    ("model", "reasoning", "config"),
    [
        ("gemini-2.5-flash", Reasoning("low"), {"thinkingBudget": 1024}),
        ("gemini-2.5-pro", Reasoning("high"), {"thinkingBudget": 16384}),
        ("gemini-2.5-pro", Reasoning(budget_tokens=3000), {"thinkingBudget": 3000}),
        ("models/gemini-2.0-flash-thinking", Reasoning("medium"), {"thinkingBudget": 4096}),
        ("gemini-3-pro-preview", Reasoning("low"), {"thinkingLevel": "LOW"}),
        ("gemini-3-pro-preview", Reasoning("medium"), {"thinkingLevel": "HIGH"}),
        ("gemini-3.1-flash-lite", Reasoning("high"), {"thinkingLevel": "HIGH"}),
        ("gemini-3-flash-preview", Reasoning(budget_tokens=512), {"thinkingLevel": "LOW"}),
        ("gemini-3-flash-preview", Reasoning(budget_tokens=8000), {"thinkingLevel": "HIGH"}),
    ],
)
def test_reasoning_becomes_a_thinking_config_by_model(
    model: str, reasoning: Reasoning, config: dict[str, Any]
) -> None:
    adapter = GeminiProvider(model=model, api_key=KEY)
    encoded = adapter.encode(CompletionRequest(messages=PLAIN.messages, reasoning=reasoning))
    assert encoded["generationConfig"] == {
        "maxOutputTokens": 4096,
        "thinkingConfig": {**config, "includeThoughts": True},
    }
    validate_request(encoded)
