"""Anthropic Messages API.

Wire shape: ``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``.
- Every system message is kept: they are joined by blank lines into the top-level ``system``.
- Tools go as ``{name, description, input_schema}``.
- An assistant turn with calls becomes content blocks: its text (when there is any), then one
  ``tool_use`` block per call whose ``input`` is the decoded arguments (``{}`` when the model's
  text was not a JSON object: the API accepts only an object there).
- Consecutive tool turns become ONE user turn of ``tool_result`` blocks, each carrying the tool
  turn's ``is_error``; ``content`` is the bounded tool result string and nothing else.
- ``max_tokens`` is required by the API; ``DEFAULT_MAX_TOKENS`` when the request sets none.
"""

from __future__ import annotations

from typing import Any

from toolwire.messages import ChatMessage, ToolSpec
from toolwire.providers.base import CompletionRequest, CompletionResponse, Usage
from toolwire.providers.wire import (
    HttpProvider,
    count,
    malformed,
    obj,
    system_text,
    text,
    tool_call,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"  # the Messages API version this adapter's shapes follow
DEFAULT_MAX_TOKENS = 4096  # the API requires a cap; enough for a tool-using answer
STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}


class AnthropicProvider(HttpProvider):
    """Claude through the Messages API."""

    default_name = "anthropic"
    default_base_url = DEFAULT_BASE_URL

    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key, "anthropic-version": API_VERSION}

    def encode(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": encode_messages(request.messages),
        }
        system = system_text(request.messages)
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [encode_tool(t) for t in request.tools]
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    def decode(self, body: Any) -> CompletionResponse:
        body = obj(body)
        blocks = body.get("content")
        if not isinstance(blocks, list):
            raise malformed(self.name, "has no content blocks")
        blocks = [obj(b) for b in blocks]
        usage = obj(body.get("usage"))
        thinking = [text(b.get("thinking")) for b in blocks if b.get("type") == "thinking"]
        stop = text(body.get("stop_reason"))
        return CompletionResponse(
            content="".join(text(b.get("text")) for b in blocks if b.get("type") == "text"),
            tool_calls=tuple(
                tool_call(b.get("id"), b.get("name"), b.get("input"))
                for b in blocks
                if b.get("type") == "tool_use"
            ),
            usage=Usage(count(usage.get("input_tokens")), count(usage.get("output_tokens"))),
            finish_reason=STOP_REASONS.get(stop, stop) or None,
            thinking="\n\n".join(t for t in thinking if t) or None,
            model=text(body.get("model")) or None,
        )


def encode_tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


def encode_messages(messages: tuple[ChatMessage, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after_tool = False
    for message in messages:
        if message.role == "system":
            continue  # sent as the top-level ``system``
        if message.role == "tool" and after_tool:
            out[-1]["content"].append(tool_result_block(message))
        elif message.role == "tool":
            out.append({"role": "user", "content": [tool_result_block(message)]})
        else:
            out.append(encode_turn(message))
        after_tool = message.role == "tool"
    return out


def encode_turn(message: ChatMessage) -> dict[str, Any]:
    if not message.tool_calls:
        return {"role": message.role, "content": message.content}
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        arguments = call.decoded_arguments()
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments or {}}
        )
    return {"role": "assistant", "content": blocks}


def tool_result_block(message: ChatMessage) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": message.content,
        "is_error": message.is_error,
    }
