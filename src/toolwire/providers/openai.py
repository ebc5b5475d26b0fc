"""OpenAI Chat Completions, and every server that speaks it (set ``base_url``).

Wire shape: ``POST {base_url}/chat/completions`` with ``Authorization: Bearer <key>``.
- Tools go as ``{"type": "function", "function": {name, description, parameters}}``; a request
  without tools has no ``tools`` key at all.
- An assistant turn's calls are replayed with ``arguments`` as the exact text the model sent,
  even when it is not valid JSON, so the model sees what it said.
- Tool turns are ``{"role": "tool", "tool_call_id", "content"}``; ``content`` is the bounded
  tool result string and nothing else.
- Reasoning arrives as ``reasoning_content`` or inline ``<think>`` blocks; both become
  ``thinking`` and never stay in the answer.
"""

from __future__ import annotations

from typing import Any

from toolwire.messages import ChatMessage, ToolCall, ToolSpec
from toolwire.providers.base import CompletionRequest, CompletionResponse, Usage
from toolwire.providers.http import HttpSettings
from toolwire.providers.wire import (
    DEFAULT_TRUST_ZONE,
    HttpProvider,
    count,
    items,
    malformed,
    obj,
    replay_arguments,
    split_think,
    text,
    tool_call,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# OpenAI's current name for the output cap; older compatible servers want "max_tokens".
DEFAULT_MAX_TOKENS_FIELD = "max_completion_tokens"


class OpenAIProvider(HttpProvider):
    """Chat Completions with tools."""

    default_name = "openai"
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None = None,
        trust_zone: str = DEFAULT_TRUST_ZONE,
        http: HttpSettings | None = None,
        name: str | None = None,
        max_tokens_field: str = DEFAULT_MAX_TOKENS_FIELD,
    ) -> None:
        super().__init__(
            model=model,
            api_key=api_key,
            base_url=base_url,
            trust_zone=trust_zone,
            http=http,
            name=name,
        )
        self.max_tokens_field = max_tokens_field

    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"}

    def encode(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [encode_message(m) for m in request.messages],
        }
        if request.tools:
            body["tools"] = [encode_tool(t) for t in request.tools]
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body[self.max_tokens_field] = request.max_tokens
        return body

    def decode(self, body: Any) -> CompletionResponse:
        body = obj(body)
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise malformed(self.name, "has no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise malformed(self.name, "choice has no message")
        content, inline_thinking = split_think(text(message.get("content")))
        usage = obj(body.get("usage"))
        return CompletionResponse(
            content=content,
            tool_calls=tuple(decode_call(c) for c in items(message.get("tool_calls"))),
            usage=Usage(count(usage.get("prompt_tokens")), count(usage.get("completion_tokens"))),
            finish_reason=text(choices[0].get("finish_reason")) or None,
            thinking=text(message.get("reasoning_content")) or inline_thinking,
            model=text(body.get("model")) or None,
        )


def encode_tool(spec: ToolSpec) -> dict[str, Any]:
    function = {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
    return {"type": "function", "function": function}


def encode_message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            # OpenAI documents null content beside tool calls; "" is refused by some servers.
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": replay_arguments(call)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def decode_call(entry: Any) -> ToolCall:
    function = obj(obj(entry).get("function"))
    return tool_call(obj(entry).get("id"), function.get("name"), function.get("arguments"))
