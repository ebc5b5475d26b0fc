"""Anthropic Messages: request bodies field by field, and parsing of real-shaped answers."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, get_args

import pytest
from anthropic.types import (
    RedactedThinkingBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from anthropic.types import Usage as SdkUsage

from toolwire import ChatMessage, CompletionRequest, ToolCall, Usage
from toolwire.core.errors import MalformedResponse
from toolwire.core.messages import ProviderState
from toolwire.providers.anthropic import (
    ANSWER_HEADROOM_TOKENS,
    REFUSAL_NOTE,
    STOPS,
    AnthropicProvider,
)
from toolwire.providers.base import Reasoning, Stop

from .conversation import ADD_ERROR, ADD_SCHEMA, PLAIN, REQUEST, TOOLS, WEATHER_SCHEMA
from .servers import KEY
from .test_anthropic_sdk import message, validate_request, whole

SYNTHETIC_ID = re.compile(r"^call_[0-9a-f]{24}$")


def provider() -> AnthropicProvider:
    return AnthropicProvider(model="claude-test", api_key=KEY)


def test_multi_round_tool_conversation_encodes_to_the_documented_shape() -> None:
    body = provider().encode(REQUEST)
    validate_request(body)
    assert body == {
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
        "tool_choice": {"type": "auto"},
    }


def test_plain_request_has_default_max_tokens_and_no_tools_or_system() -> None:
    validate_request(provider().encode(PLAIN))
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
    assert (response.finish_reason, response.model) == ("tool_use", "claude-test-2025")
    assert response.stop is Stop.TOOL_CALLS


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


# Built from the SDK's own response models.

THOUGHT = ThinkingBlock(type="thinking", thinking="Both at once.", signature="sig-Ep4BCkgIBx")
HIDDEN = RedactedThinkingBlock(type="redacted_thinking", data="EmwKAhgBEgy3va3pzix/LafPsn4a")
CALL = ToolUseBlock(type="tool_use", id="toolu_01", name="weather", input={"city": "Oslo"})
SAY = TextBlock(type="text", text="Checking.")
REPLAYED = [
    {"type": "thinking", "thinking": "Both at once.", "signature": "sig-Ep4BCkgIBx"},
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
    {"type": "text", "text": "Checking."},
    {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {"city": "Oslo"}},
]


@pytest.mark.parametrize(
    ("word", "stop"),
    [
        ("end_turn", Stop.END),
        ("stop_sequence", Stop.END),
        ("tool_use", Stop.TOOL_CALLS),
        ("max_tokens", Stop.MAX_TOKENS),
        ("model_context_window_exceeded", Stop.CONTEXT_WINDOW),
        ("refusal", Stop.REFUSAL),
        ("pause_turn", Stop.PAUSED),
    ],
)
def test_every_sdk_stop_reason_maps_and_keeps_its_word(word: Any, stop: Stop) -> None:
    response = provider().decode(whole(message([SAY], word)))
    assert (response.stop, response.finish_reason, response.content) == (stop, word, "Checking.")
    assert response.refusal == ("Checking." if stop is Stop.REFUSAL else None)


def test_stop_words_cover_the_sdk_literal() -> None:
    assert set(STOPS) == set(get_args(StopReason))


def test_an_unknown_or_missing_stop_reason() -> None:
    assert provider().decode({"content": [], "stop_reason": "new_reason"}).stop is Stop.OTHER
    missing = provider().decode({"content": [], "stop_reason": None})
    assert (missing.stop, missing.finish_reason) == (Stop.END, None)


def test_a_refusal_without_text_says_the_explanation_or_a_fixed_note() -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "Not that."}
    explained = provider().decode(whole(message([], "refusal", stop_details=details)))
    assert (explained.stop, explained.refusal, explained.content) == (Stop.REFUSAL, "Not that.", "")
    bare = provider().decode(whole(message([], "refusal")))
    assert bare.refusal == REFUSAL_NOTE == "The model declined to answer."


def test_cache_writes_and_reads_count_as_prompt_tokens() -> None:
    usage = SdkUsage(
        input_tokens=50,
        cache_creation_input_tokens=1200,
        cache_read_input_tokens=3000,
        output_tokens=90,
    )
    response = provider().decode(whole(message([SAY], usage=usage)))
    assert response.usage == Usage(
        prompt_tokens=4250, completion_tokens=90, cache_read_tokens=3000, cache_write_tokens=1200
    )


def test_thinking_blocks_are_kept_in_order_as_provider_state() -> None:
    response = provider().decode(whole(message([THOUGHT, HIDDEN, SAY, CALL], "tool_use")))
    assert response.thinking == "Both at once."
    assert response.tool_calls == (ToolCall("toolu_01", "weather", '{"city":"Oslo"}'),)
    assert response.provider_state == ProviderState("anthropic", {"content": REPLAYED})


def test_a_turn_of_text_and_tool_uses_needs_no_state() -> None:
    assert provider().decode(whole(message([SAY, CALL], "tool_use"))).provider_state is None


def test_a_paused_turn_keeps_its_whole_content() -> None:
    response = provider().decode(whole(message([THOUGHT, SAY], "pause_turn")))
    assert response.provider_state == ProviderState("anthropic", {"content": REPLAYED[::2][:2]})
    text_only = provider().decode(whole(message([SAY], "pause_turn")))
    assert text_only.provider_state == ProviderState("anthropic", {"content": [REPLAYED[2]]})


def _history(state: ProviderState | None) -> CompletionRequest:
    turn = ChatMessage.assistant(
        "Checking.", [ToolCall("toolu_01", "weather", '{"city":"Oslo"}')], state
    )
    return CompletionRequest(
        messages=(ChatMessage.user("Weather?"), turn, ChatMessage.tool_result("toolu_01", "3°C")),
        tools=TOOLS,
        reasoning=Reasoning(budget_tokens=2048),
    )


def test_an_assistant_turn_goes_back_verbatim_from_its_own_state() -> None:
    body = provider().encode(_history(ProviderState("anthropic", {"content": REPLAYED})))
    validate_request(body)
    assert body["messages"][1] == {"role": "assistant", "content": REPLAYED}


def test_another_familys_state_never_goes_on_the_anthropic_wire() -> None:
    foreign = ProviderState("gemini", {"content": [{"thoughtSignature": "g-sig"}]})
    body = provider().encode(_history(foreign))
    validate_request(body)
    assert body["messages"][1] == {"role": "assistant", "content": [REPLAYED[2], REPLAYED[3]]}
    assert b"g-sig" not in json.dumps(body).encode()


@pytest.mark.parametrize(
    ("reasoning", "max_tokens", "budget", "cap"),
    [
        (Reasoning(budget_tokens=2048), None, 2048, 4096),
        (Reasoning(budget_tokens=2048), 512, 2048, 2048 + ANSWER_HEADROOM_TOKENS),
        (Reasoning(effort="high"), None, 16384, 16384 + ANSWER_HEADROOM_TOKENS),
        (Reasoning(budget_tokens=10), 8000, 1024, 8000),  # the API's minimum budget
    ],
)
def test_thinking_sends_a_budget_below_max_tokens(
    reasoning: Reasoning, max_tokens: int | None, budget: int, cap: int
) -> None:
    request = CompletionRequest(
        messages=(ChatMessage.user("Hi"),), reasoning=reasoning, max_tokens=max_tokens,
        temperature=0.7,
    )  # fmt: skip
    body = provider().encode(request)
    validate_request(body)
    assert body == {
        "model": "claude-test",
        "max_tokens": cap,
        "messages": [{"role": "user", "content": "Hi"}],
        "thinking": {"type": "enabled", "budget_tokens": budget},
    }
    assert body["max_tokens"] > body["thinking"]["budget_tokens"]


def test_the_synthesis_round_sends_the_tools_with_choice_none() -> None:
    request = dataclasses.replace(REQUEST, tool_choice="none", stream=True)
    body = provider().encode(request)
    validate_request(body)
    assert (body["tool_choice"], len(body["tools"]), body["stream"]) == ({"type": "none"}, 2, True)
