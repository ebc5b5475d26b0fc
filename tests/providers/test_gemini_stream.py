"""Gemini streamGenerateContent: a streamed turn normalises to exactly the non-streaming one."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from google.genai import types

from toolwire import ChatMessage, CompletionRequest
from toolwire.providers.base import CompletionResponse, Delta, Stop
from toolwire.providers.gemini_stream import StreamAssembly

from .test_gemini_sdk import (
    GeminiServer,
    call,
    chunks,
    dump,
    response,
    said,
    serving,
    validate_request,
)

TURNS: dict[str, dict[str, Any]] = {
    "calls with thoughts": response(
        [
            said("Oslo first, then the sum.", thought=True),
            said("Checking both."),
            call("weather", {"city": "Oslo"}, sig=1),
            call("add", {"a": 2, "b": 2}),
        ]
    ),
    "calls with api ids": response(
        [call("weather", {"city": "Oslo"}, id="fc-1", sig=2), call("add", {"a": 1}, id="fc-2")]
    ),
    "signed answer": response(
        [said("Thought through.", thought=True), said("Oslo is rainy; 2+2=4.", sig=3)]
    ),
    "cut": response([said("The answer is cut her")], finish="MAX_TOKENS"),
    "blocked answer": response([], finish="SAFETY", finish_message="Dangerous content."),
    "malformed call": response(
        [], finish="MALFORMED_FUNCTION_CALL", finish_message="Malformed function call: add(a=)"
    ),
    "blocked prompt": dump(
        types.GenerateContentResponse(
            prompt_feedback=types.GenerateContentResponsePromptFeedback(
                block_reason=types.BlockedReason.BLOCKLIST, block_reason_message="Terms."
            ),
            usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=4),
            model_version="gemini-3-pro-preview",
        )
    ),
}
ASK = CompletionRequest(messages=(ChatMessage.user("Weather in Oslo, and 2+2?"),))


def complete(turn: dict[str, Any], *, stream: bool) -> tuple[CompletionResponse, list[Delta]]:
    deltas: list[Delta] = []
    gemini = GeminiServer([turn])
    request = dataclasses.replace(ASK, stream=stream, on_delta=deltas.append)
    with serving(gemini) as provider:
        got = asyncio.run(provider.complete(request))
    suffix = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
    assert gemini.paths == [f"/v1beta/models/gemini-3-pro-preview{suffix}"]
    validate_request(gemini.bodies[0])
    return got, deltas


def comparable(response: CompletionResponse) -> CompletionResponse:
    """Synthesised call ids differ between two decodes; everything else must not."""
    calls = tuple(dataclasses.replace(c, id="") if c.id.startswith("call_") else c
                  for c in response.tool_calls)  # fmt: skip
    return dataclasses.replace(response, tool_calls=calls)


@pytest.mark.parametrize("name", TURNS)
def test_a_streamed_turn_equals_the_whole_one(name: str) -> None:
    whole, quiet = complete(TURNS[name], stream=False)
    streamed, _ = complete(TURNS[name], stream=True)
    assert comparable(streamed) == comparable(whole)
    assert quiet == []  # a whole answer has no deltas


def test_the_stream_really_came_in_pieces_and_deltas_follow_them() -> None:
    turn = TURNS["signed answer"]
    assert len(chunks(turn)) == 11  # 4 thought pieces, 6 answer pieces, the signature
    streamed, deltas = complete(turn, stream=True)
    assert "".join(d.text for d in deltas if d.kind == "thinking") == "Thought through."
    assert "".join(d.text for d in deltas if d.kind == "content") == "Oslo is rainy; 2+2=4."
    assert deltas[:2] == [Delta("thinking", "Thou"), Delta("thinking", "ght ")]
    assert all(d.text for d in deltas)
    assert streamed.provider_state is not None
    assert streamed.provider_state.data == {"parts": turn["candidates"][0]["content"]["parts"]}
    assert (streamed.stop, streamed.thinking) == (Stop.END, "Thought through.")


def test_stream_usage_is_the_last_chunk_s() -> None:
    streamed, _ = complete(TURNS["calls with thoughts"], stream=True)
    assert (streamed.usage.prompt_tokens, streamed.usage.completion_tokens) == (11, 12)
    assert streamed.usage.reasoning_tokens == 5


def test_signed_parts_do_not_absorb_the_text_after_them() -> None:
    assembly = StreamAssembly(None)
    pieces = [
        {"text": "One", "thoughtSignature": "c2ln"},
        {"text": "Two"},
        {"text": "Three", "thought": True},
        {"functionCall": {"name": "clock"}},
        {"text": "", "thoughtSignature": "bGF0ZQ=="},
    ]
    for piece in pieces:
        assembly.feed("", {"candidates": [{"content": {"role": "model", "parts": [piece]}}]})
    assembly.feed("", {"candidates": [{"finishReason": "STOP"}], "usageMetadata": {"x": 1}})
    assert assembly.body() == {
        "candidates": [
            {
                "content": {"role": "model", "parts": pieces},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"x": 1},
    }
