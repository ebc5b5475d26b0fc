"""Google Gemini ``generateContent``.

Wire shape: ``POST {base_url}/models/{model}:generateContent``; the key travels in the
``x-goog-api-key`` header, never in the URL (URLs end up in logs and proxies).
- Every system message is kept: joined by blank lines into ``systemInstruction``.
- Roles are ``user`` and ``model``. An assistant turn's calls become ``functionCall`` parts whose
  ``args`` are the decoded arguments (``{}`` when the model's text was not a JSON object).
- Consecutive tool turns become ONE ``user`` turn of ``functionResponse`` parts (the API wants as
  many responses in that turn as the model made calls). Gemini correlates by name, found through
  a map of call id to name; ``response`` is the tool result string decoded as a JSON object when
  it is one, else ``{"result": content}``. Nothing but that string is encoded.
- Tools go as ``[{"functionDeclarations": [{name, description, parametersJsonSchema}]}]``: the
  JSON-schema field takes a tool's schema as is.
- The API may give no call ids; the adapter then synthesises unique ones.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from toolwire.messages import ChatMessage, ToolCall, ToolSpec
from toolwire.providers.base import CompletionRequest, CompletionResponse, Usage
from toolwire.providers.wire import (
    HttpProvider,
    count,
    items,
    malformed,
    obj,
    system_text,
    text,
    tool_call,
)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
DEFAULT_MAX_OUTPUT_TOKENS = 4096  # matches the other adapters' default output cap
FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
}


class GeminiProvider(HttpProvider):
    """Gemini through the Generative Language API."""

    default_name = "gemini"
    default_base_url = DEFAULT_BASE_URL

    def model_name(self, model: str) -> str:
        return model.removeprefix("models/")  # the API's own listing names models so

    def url(self) -> str:
        return f"{self.base_url}/models/{quote(self.model, safe='')}:generateContent"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"x-goog-api-key": api_key}

    def encode(self, request: CompletionRequest) -> dict[str, Any]:
        config: dict[str, Any] = {
            "maxOutputTokens": request.max_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        }
        if request.temperature is not None:
            config["temperature"] = request.temperature
        body: dict[str, Any] = {"contents": encode_contents(request.messages)}
        system = system_text(request.messages)
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if request.tools:
            body["tools"] = [{"functionDeclarations": [encode_tool(t) for t in request.tools]}]
        body["generationConfig"] = config
        return body

    def decode(self, body: Any) -> CompletionResponse:
        body = obj(body)
        candidates = body.get("candidates")
        usage = obj(body.get("usageMetadata"))
        tokens = Usage(
            count(usage.get("promptTokenCount")), count(usage.get("candidatesTokenCount"))
        )
        if not isinstance(candidates, list) or not candidates:
            if obj(body.get("promptFeedback")).get("blockReason"):
                return CompletionResponse(usage=tokens, finish_reason="content_filter")
            raise malformed(self.name, "has no candidates")
        candidate = obj(candidates[0])
        parts = [obj(p) for p in items(obj(candidate.get("content")).get("parts"))]
        answer = [text(p.get("text")) for p in parts if "text" in p and not p.get("thought")]
        thoughts = [text(p.get("text")) for p in parts if p.get("thought")]
        finish = text(candidate.get("finishReason"))
        return CompletionResponse(
            content="".join(answer),
            tool_calls=tuple(decode_call(p["functionCall"]) for p in parts if "functionCall" in p),
            usage=tokens,
            finish_reason=FINISH_REASONS.get(finish, finish) or None,
            thinking="\n\n".join(t for t in thoughts if t) or None,
            model=text(body.get("modelVersion")) or None,
        )


def encode_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "description": spec.description,
        "parametersJsonSchema": spec.parameters,
    }


def encode_contents(messages: tuple[ChatMessage, ...]) -> list[dict[str, Any]]:
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    out: list[dict[str, Any]] = []
    after_tool = False
    for message in messages:
        if message.role == "system":
            continue  # sent as ``systemInstruction``
        if message.role == "tool" and after_tool:
            out[-1]["parts"].append(function_response(message, names))
        elif message.role == "tool":
            out.append({"role": "user", "parts": [function_response(message, names)]})
        else:
            out.append(encode_turn(message))
        after_tool = message.role == "tool"
    return out


def encode_turn(message: ChatMessage) -> dict[str, Any]:
    if message.role == "user":
        return {"role": "user", "parts": [{"text": message.content}]}
    parts: list[dict[str, Any]] = []
    if message.content or not message.tool_calls:
        parts.append({"text": message.content})
    for call in message.tool_calls:
        args = call.decoded_arguments() or {}
        parts.append({"functionCall": {"name": call.name, "args": args}})
    return {"role": "model", "parts": parts}


def function_response(message: ChatMessage, names: dict[str, str]) -> dict[str, Any]:
    name = names.get(message.tool_call_id or "", "")
    return {"functionResponse": {"name": name, "response": response_object(message.content)}}


def response_object(content: str) -> dict[str, Any]:
    """The tool result as Gemini wants it: a JSON object."""
    if content.lstrip().startswith("{"):
        try:
            value = json.loads(content)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    return {"result": content}


def decode_call(entry: Any) -> ToolCall:
    call = obj(entry)
    return tool_call(call.get("id"), call.get("name"), call.get("args"))
