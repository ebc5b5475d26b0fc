"""Adapter cost per round: encode a 20-message conversation and decode a real-shaped answer.

For each adapter, one round is ``encode(request)``, serialising that body, parsing the answer's
bytes and ``decode``. The reference, measured in the same process, is ``json.dumps`` of the same
body plus ``json.loads`` of the same answer: the work no adapter can avoid. The ratio is what the
adapter adds on top. Run: ``python bench/providers.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from toolwire import ChatMessage, CompletionRequest, ToolCall, ToolSpec
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.responses import ResponsesProvider
from toolwire.providers.wire import HttpProvider

REPETITIONS = 2000  # enough for each timing to last tens of milliseconds
RUNS = 5  # best of several: the minimum is the least disturbed measurement
SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["query"],
}


def conversation() -> CompletionRequest:
    """System, user, then six rounds of assistant calls and results, then a user turn: 20."""
    messages = [ChatMessage.system("You answer from the records."), ChatMessage.user("Find it.")]
    for n in range(6):
        call = ToolCall(f"call_{n}", "search", json.dumps({"query": f"term {n}", "limit": 5}))
        messages.append(ChatMessage.assistant(f"Looking up term {n}.", [call]))
        messages.append(ChatMessage.tool_result(f"call_{n}", f"row {n}: " + "data, " * 60))
        messages.append(ChatMessage.user("Go on.") if n < 5 else ChatMessage.user("Summarise."))
    tools = tuple(ToolSpec(f"tool_{i}", "A tool.", SCHEMA) for i in range(3))
    return CompletionRequest(messages=tuple(messages[:20]), tools=tools)


ANSWERS: dict[str, Any] = {
    "openai": {
        "model": "m",
        "choices": [
            {
                "message": {
                    "content": "Summary " * 40,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "search", "arguments": '{"query": "x"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 80},
    },
    "openai-responses": {
        "id": "resp_1",
        "object": "response",
        "model": "m",
        "status": "completed",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA" * 64},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Summary " * 40, "annotations": []}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "c1",
                "name": "search",
                "arguments": '{"query": "x"}',
            },
        ],
        "usage": {"input_tokens": 900, "output_tokens": 80},
    },
    "anthropic": {
        "model": "m",
        "content": [
            {"type": "text", "text": "Summary " * 40},
            {"type": "tool_use", "id": "c1", "name": "search", "input": {"query": "x"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 900, "output_tokens": 80},
    },
    "gemini": {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Summary " * 40},
                        {"functionCall": {"name": "search", "args": {"query": "x"}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 80},
    },
}


def best(work: Callable[[], object]) -> float:
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        for _ in range(REPETITIONS):
            work()
        timings.append(time.perf_counter() - started)
    return min(timings) / REPETITIONS


def measure(adapter: HttpProvider, request: CompletionRequest) -> tuple[float, float]:
    body = adapter.encode(request)
    answer = json.dumps(ANSWERS[adapter.name]).encode()

    def reference() -> object:
        json.dumps(body, ensure_ascii=False)
        return json.loads(answer)

    def round_trip() -> object:
        json.dumps(adapter.encode(request), ensure_ascii=False)
        return adapter.decode(json.loads(answer))

    return best(reference), best(round_trip)


def main() -> None:
    request = conversation()
    adapters: list[HttpProvider] = [
        OpenAIProvider(model="m", api_key="k"),
        ResponsesProvider(model="m", api_key="k"),
        AnthropicProvider(model="m", api_key="k"),
        GeminiProvider(model="m", api_key="k"),
    ]
    print(f"{len(request.messages)} messages, {len(request.tools)} tools; best of {RUNS}")
    for adapter in adapters:
        reference, adapter_cost = measure(adapter, request)
        print(
            f"{adapter.name:16} {adapter_cost * 1e6:8.1f} us/round  "
            f"json-only {reference * 1e6:8.1f} us  ratio {adapter_cost / reference:5.2f}x"
        )


if __name__ == "__main__":
    main()
