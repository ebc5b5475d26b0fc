"""Gemini runs through ToolLoop over real loopback HTTP, whole and streamed, with SDK-built turns.

Every request the adapter sends is checked against google-genai's types; thought signatures
must come back exactly as the API gave them, on the parts that carried them.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types

from toolwire import ChatMessage, TerminationReason, ToolLoop, ToolRegistry, ToolResult, tool
from toolwire.loop.seam import malformed_call
from toolwire.policy.options import RunOptions
from toolwire.providers.base import Reasoning, Stop, Usage

from .test_gemini_sdk import (
    GeminiServer,
    call,
    dump,
    response,
    said,
    serving,
    validate_request,
)


@tool(group="demo", data_class="public")
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: 3°C, rain"


@tool(group="demo", data_class="public")
def station(city: str) -> ToolResult:
    """Raw readings of a city's weather station."""
    return ToolResult.error(f"Error: the {city} station is offline.")


@tool(group="demo", data_class="public")
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


ROUND_1 = response(
    [
        said("Oslo's weather and Bergen's station, together.", thought=True),
        call("weather", {"city": "Oslo"}, sig=1),
        call("station", {"city": "Bergen"}),
    ]
)
ROUND_2 = response([said("Now the sum.", thought=True), call("add", {"a": 2, "b": 2}, id="fc-add",
                                                                sig=2)])  # fmt: skip
ANSWER = response([said("All there.", thought=True), said("Oslo is rainy; 2+2=4.", sig=3)])
STREAMING = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


def parts(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return list(turn["candidates"][0]["content"]["parts"])


def run(
    turns: list[dict[str, Any]], *, stream: bool, max_rounds: int = 5
) -> tuple[Any, GeminiServer]:
    gemini = GeminiServer(turns)
    options = RunOptions(max_rounds=max_rounds, reasoning=Reasoning("high"), stream=stream)
    with serving(gemini) as provider:
        loop = ToolLoop(provider, ToolRegistry([weather, station, add]))
        result = loop.run_sync([ChatMessage.system("Be brief."), ChatMessage.user("Go.")],
                               options=options)  # fmt: skip
    suffix = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
    assert set(gemini.paths) == {f"/v1beta/models/gemini-3-pro-preview{suffix}"}
    for body in gemini.bodies:
        validate_request(body)
        assert body["generationConfig"]["thinkingConfig"] == {
            "thinkingLevel": "HIGH",
            "includeThoughts": True,
        }
    return result, gemini


def responses(body: dict[str, Any], index: int) -> list[dict[str, Any]]:
    return [p["functionResponse"] for p in body["contents"][index]["parts"]]


@STREAMING
def test_three_rounds_replay_every_signature_and_only_api_ids(stream: bool) -> None:
    result, gemini = run([ROUND_1, ROUND_2, ANSWER], stream=stream)
    assert (result.final_content, result.reason) == (
        "Oslo is rainy; 2+2=4.",
        TerminationReason.COMPLETED,
    )
    assert [(i.name, i.is_error) for i in result.trace] == [
        ("weather", False),
        ("station", True),
        ("add", False),
    ]
    first, second, third = gemini.bodies
    assert first["contents"] == [{"role": "user", "parts": [{"text": "Go."}]}]
    assert second["contents"][1] == {"role": "model", "parts": parts(ROUND_1)}
    assert responses(second, 2) == [
        {"name": "weather", "response": {"output": "Oslo: 3°C, rain"}},
        {"name": "station", "response": {"error": "Error: the Bergen station is offline."}},
    ]
    assert third["contents"][:3] == second["contents"]
    assert third["contents"][3] == {"role": "model", "parts": parts(ROUND_2)}
    assert responses(third, 4) == [{"id": "fc-add", "name": "add", "response": {"output": "4"}}]
    auto = {"functionCallingConfig": {"mode": "AUTO"}}
    assert all(body["toolConfig"] == auto for body in gemini.bodies)
    assert result.usage == Usage(
        prompt_tokens=33, completion_tokens=36, reasoning_tokens=15
    )  # per turn: 11 in, 7 answer and 5 thought tokens out


@STREAMING
def test_the_synthesis_round_sends_the_tools_with_mode_none(stream: bool) -> None:
    result, gemini = run([ROUND_1, ROUND_2, ANSWER], stream=stream, max_rounds=2)
    assert (result.final_content, result.reason, result.truncated) == (
        "Oslo is rainy; 2+2=4.",
        TerminationReason.MAX_ITERATIONS,
        True,
    )
    *rounds, synthesis = gemini.bodies
    assert len(rounds) == 2
    assert synthesis["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    names = [d["name"] for d in synthesis["tools"][0]["functionDeclarations"]]
    assert names == ["weather", "station", "add"]
    assert synthesis["contents"][3] == {"role": "model", "parts": parts(ROUND_2)}
    assert all(body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}} for body in rounds)


@STREAMING
def test_a_malformed_function_call_is_told_to_the_model_and_the_run_goes_on(
    stream: bool,
) -> None:
    malformed = response([], finish="MALFORMED_FUNCTION_CALL",
                         finish_message="Malformed function call: add(a=2, b=)")  # fmt: skip
    result, gemini = run([malformed, ROUND_2, ANSWER], stream=stream)
    assert (result.final_content, result.reason) == (
        "Oslo is rainy; 2+2=4.",
        TerminationReason.COMPLETED,
    )
    assert gemini.bodies[1]["contents"] == [
        {"role": "user", "parts": [{"text": "Go."}]},
        {"role": "user", "parts": [{"text": malformed_call()}]},
    ]
    assert [i.name for i in result.trace] == ["add"]


BLOCKED_PROMPT = dump(
    types.GenerateContentResponse(
        prompt_feedback=types.GenerateContentResponsePromptFeedback(
            block_reason=types.BlockedReason.PROHIBITED_CONTENT,
            block_reason_message="Prompt was blocked.",
        ),
        usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=4),
    )
)


@STREAMING
@pytest.mark.parametrize(
    ("turn", "reason", "truncated", "stop", "finish", "refusal", "content"),
    [
        (response([said("Oslo is rai")], finish="MAX_TOKENS"), TerminationReason.MAX_TOKENS,
         True, Stop.MAX_TOKENS, "MAX_TOKENS", None, "Oslo is rai"),
        (response([], finish="SAFETY", finish_message="Dangerous content."),
         TerminationReason.BLOCKED, False, Stop.BLOCKED, "SAFETY", "SAFETY: Dangerous content.",
         ""),
        (response([said("Cited text")], finish="RECITATION"), TerminationReason.BLOCKED, False,
         Stop.BLOCKED, "RECITATION", "RECITATION", "Cited text"),
        (BLOCKED_PROMPT, TerminationReason.BLOCKED, False, Stop.BLOCKED, "PROHIBITED_CONTENT",
         "PROHIBITED_CONTENT: Prompt was blocked.", ""),
        (response([said("Hi.")], finish="OTHER"), TerminationReason.COMPLETED, False, Stop.OTHER,
         "OTHER", None, "Hi."),
    ],
)  # fmt: skip
def test_stop_reasons_end_the_run_with_gemini_s_word(
    stream: bool,
    turn: dict[str, Any],
    reason: TerminationReason,
    truncated: bool,
    stop: Stop,
    finish: str,
    refusal: str | None,
    content: str,
) -> None:
    result, gemini = run([turn], stream=stream)
    assert len(gemini.bodies) == 1
    assert (result.reason, result.truncated, result.stop, result.finish_reason) == (
        reason,
        truncated,
        stop,
        finish,
    )
    assert (result.refusal, result.final_content) == (refusal, content)
