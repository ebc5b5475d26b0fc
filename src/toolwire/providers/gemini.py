"""Google Gemini ``generateContent`` and ``streamGenerateContent``.

Wire shape: ``POST {base_url}/models/{model}:generateContent`` (or ``:streamGenerateContent
?alt=sse`` when the request streams); the key travels in the ``x-goog-api-key`` header, never in
the URL (URLs end up in logs and proxies).
- Every system message is kept: joined by blank lines into ``systemInstruction``.
- Roles are ``user`` and ``model``. A model turn this adapter decoded carries its parts as
  ``ProviderState("gemini", {"parts": [...]})``; they are replayed verbatim (thought signatures
  on ``functionCall`` and text parts included: Gemini 3 refuses a follow-up turn whose calls lost
  theirs), but only when the state is this family's and still matches the turn's calls and text.
  Otherwise the turn is rebuilt from its text and calls, ``args`` being the decoded arguments
  (``{}`` when the model's text was not a JSON object).
- Consecutive tool turns become ONE ``user`` turn of ``functionResponse`` parts (the API wants as
  many responses in that turn as the model made calls), named through a map of call id to name.
  ``response`` is ``{"error": text}`` for an error result and ``{"output": value}`` otherwise,
  where ``value`` is the result decoded when it is a JSON object and the text itself when not
  (the model reads structure as structure). Nothing but the result string is encoded.
- A call's ``id`` and its response's ``id`` are sent only when the API gave that id (it is in a
  replayed state); an id the adapter synthesised never goes on the wire.
- Tools go as ``[{"functionDeclarations": [{name, description, parametersJsonSchema}]}]``: the
  JSON-schema field takes a tool's schema as is. The choice is always explicit, as
  ``toolConfig.functionCallingConfig`` (google-genai ``FunctionCallingConfig``): ``mode`` AUTO,
  NONE, ANY for "required", and ANY with ``allowedFunctionNames: [name]`` for one tool; a server
  whose quirks say it drops ``allowedFunctionNames`` (``Quirks.named_tool_choice`` False:
  ``presets.quirks_for`` away from Google's URL) gets ANY with that tool alone offered.
- Reasoning becomes ``generationConfig.thinkingConfig`` with ``includeThoughts``: a
  ``thinkingLevel`` for Gemini 3 and later (chosen by the model name), a ``thinkingBudget``
  before. Thought parts (``thought: true``) become ``CompletionResponse.thinking``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from toolwire.core.messages import ChatMessage, ProviderState, ToolCall, ToolSpec
from toolwire.providers.base import (
    EFFORT_BUDGETS,
    UNKNOWN_USAGE,
    CompletionRequest,
    CompletionResponse,
    DeltaSink,
    Reasoning,
    Stop,
    Usage,
)
from toolwire.providers.gemini_stream import StreamAssembly
from toolwire.providers.presets import GEMINI_BASE_URL
from toolwire.providers.wire import (
    HttpProvider,
    count,
    items,
    malformed,
    obj,
    system_text,
    text,
    tool_description,
)
from toolwire.providers.wire import tool_call as make_call

DEFAULT_BASE_URL = GEMINI_BASE_URL
DEFAULT_MAX_OUTPUT_TOKENS = 4096  # matches the other adapters' default output cap
FAMILY = "gemini"
_BLOCKED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
            "IMAGE_PROHIBITED_CONTENT"}  # fmt: skip
STOPS = {
    "STOP": Stop.END,
    "MAX_TOKENS": Stop.MAX_TOKENS,
    "MALFORMED_FUNCTION_CALL": Stop.MALFORMED_CALL,
    **dict.fromkeys(_BLOCKED, Stop.BLOCKED),
}
_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}  # the API's word for each choice
_LEVELS_FROM = 3  # Gemini 3 takes a thinking level; earlier models a token budget
_MODEL_GENERATION = re.compile(r"^gemini-(\d+)")


class GeminiProvider(HttpProvider):
    """Gemini through the Generative Language API."""

    default_name = FAMILY
    default_base_url = DEFAULT_BASE_URL

    def model_name(self, model: str) -> str:
        return model.removeprefix("models/")  # the API's own listing names models so

    def url(self) -> str:
        return f"{self.base_url}/models/{quote(self.model, safe='')}:generateContent"

    def stream_url(self) -> str:
        return f"{self.base_url}/models/{quote(self.model, safe='')}:streamGenerateContent?alt=sse"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"x-goog-api-key": api_key}

    def assembly(self, on_delta: DeltaSink | None) -> StreamAssembly:
        return StreamAssembly(on_delta)

    def encode(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"contents": encode_contents(request.messages, self.family)}
        system = system_text(request.messages)
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        declared = bool(request.tools)
        shaped = request.output is not None
        if shaped and declared and not answers_in_schema_with_tools(self.model):
            # Before Gemini 3 a schema and functions cannot be asked together: the schema is
            # asked when the answer is due (the functions then left out), else only checked.
            due = request.output_forced or request.tool_choice == "none"
            declared, shaped = not due, due
        if declared:
            body.update(self.encode_tools(request))
        body["generationConfig"] = self.generation_config(request, shaped=shaped)
        return body

    def encode_tools(self, request: CompletionRequest) -> dict[str, Any]:
        """``tools`` and ``toolConfig``, the choice always explicit."""
        tools, choice = request.tools, request.tool_choice
        if choice not in _MODES and not self.quirks.named_tool_choice:
            tools = tuple(t for t in tools if t.name == choice) or tools
            choice = "required"  # that tool alone, and some call required
        encoded = [encode_tool(t, self.quirks.description_chars) for t in tools]
        declarations = [{"functionDeclarations": encoded}]
        return {"tools": declarations,
                "toolConfig": {"functionCallingConfig": encode_choice(choice)}}  # fmt: skip

    def generation_config(self, request: CompletionRequest, *, shaped: bool) -> dict[str, Any]:
        """``shaped``: the answer is asked in the run's output schema."""
        config: dict[str, Any] = {
            "maxOutputTokens": request.max_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        }
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.reasoning is not None:
            config["thinkingConfig"] = thinking_config(self.model, request.reasoning)
        if shaped and request.output is not None:  # the answer as JSON the schema accepts
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = dict(request.output.schema)
        return config

    def decode(self, body: Any) -> CompletionResponse:
        body = obj(body)
        metadata = body.get("usageMetadata")
        tokens = usage_of(metadata) if isinstance(metadata, dict) else UNKNOWN_USAGE
        model = text(body.get("modelVersion")) or None
        answer = text(body.get("responseId")) or None
        candidates = body.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            feedback = obj(body.get("promptFeedback"))
            reason = text(feedback.get("blockReason"))
            if not reason:
                raise malformed(self.name, "has no candidates")
            refusal = block_text(reason, text(feedback.get("blockReasonMessage")))
            return CompletionResponse(usage=tokens, stop=Stop.BLOCKED, finish_reason=reason,
                                      refusal=refusal, model=model, response_id=answer)  # fmt: skip
        return self.decode_candidate(obj(candidates[0]), tokens, model, answer)

    def decode_candidate(
        self,
        candidate: Mapping[str, Any],
        tokens: Usage,
        model: str | None,
        response_id: str | None = None,
    ) -> CompletionResponse:
        parts = [dict(obj(p)) for p in items(obj(candidate.get("content")).get("parts"))]
        calls = tuple(decode_call(p["functionCall"]) for p in parts if "functionCall" in p)
        finish = text(candidate.get("finishReason"))
        stop = STOPS.get(finish, Stop.OTHER) if finish else Stop.END
        if stop is Stop.END and calls:
            stop = Stop.TOOL_CALLS
        thoughts = [text(p.get("text")) for p in parts if p.get("thought")]
        refused = stop is Stop.BLOCKED
        return CompletionResponse(
            content="".join(answer_texts(parts)),
            tool_calls=calls,
            usage=tokens,
            stop=stop,
            finish_reason=finish or None,
            refusal=block_text(finish, text(candidate.get("finishMessage"))) if refused else None,
            thinking="\n\n".join(t for t in thoughts if t) or None,
            model=model,
            provider_state=ProviderState(self.family, {"parts": parts}) if parts else None,
            response_id=response_id,
        )


def encode_choice(choice: str) -> dict[str, Any]:
    if choice in _MODES:
        return {"mode": _MODES[choice]}
    return {"mode": "ANY", "allowedFunctionNames": [choice]}


def usage_of(usage: Mapping[str, Any]) -> Usage:
    """``promptTokenCount`` includes cached tokens; thoughts are billed as output."""
    thoughts = count(usage.get("thoughtsTokenCount"))
    return Usage(
        prompt_tokens=count(usage.get("promptTokenCount")),
        completion_tokens=count(usage.get("candidatesTokenCount")) + thoughts,
        cache_read_tokens=count(usage.get("cachedContentTokenCount")),
        reasoning_tokens=thoughts,
    )


def block_text(reason: str, message: str) -> str:
    return f"{reason}: {message}" if message else reason


def answer_texts(parts: list[dict[str, Any]]) -> list[str]:
    return [text(p.get("text")) for p in parts if "text" in p and not p.get("thought")]


def thinking_config(model: str, reasoning: Reasoning) -> dict[str, Any]:
    """A level for Gemini 3 and later (low, or high for anything more), else a budget."""
    generation = _MODEL_GENERATION.match(model)
    if generation is None or int(generation.group(1)) < _LEVELS_FROM:
        return {"thinkingBudget": reasoning.budget, "includeThoughts": True}
    low = reasoning.effort == "low" or (
        reasoning.effort is None and reasoning.budget <= EFFORT_BUDGETS["low"]
    )
    return {"thinkingLevel": "LOW" if low else "HIGH", "includeThoughts": True}


def answers_in_schema_with_tools(model: str) -> bool:
    """Whether the model takes a response schema beside function declarations (Gemini 3 and
    later; earlier ones refuse the pair)."""
    generation = _MODEL_GENERATION.match(model)
    return generation is not None and int(generation.group(1)) >= _LEVELS_FROM


def encode_tool(spec: ToolSpec, description_chars: int) -> dict[str, Any]:
    return {
        "name": spec.name,
        "description": tool_description(spec, description_chars),
        "parametersJsonSchema": spec.parameters,
    }


def encode_contents(messages: tuple[ChatMessage, ...], family: str) -> list[dict[str, Any]]:
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    given = api_call_ids(messages, family)
    out: list[dict[str, Any]] = []
    after_tool = False
    for message in messages:
        if message.role == "system":
            continue  # sent as ``systemInstruction``
        if message.role == "tool" and after_tool:
            out[-1]["parts"].append(function_response(message, names, given))
        elif message.role == "tool":
            out.append({"role": "user", "parts": [function_response(message, names, given)]})
        elif message.role == "user":
            out.append({"role": "user", "parts": [{"text": message.content}]})
        else:
            parts = replayed_parts(message, family)
            out.append({"role": "model", "parts": parts or built_parts(message)})
        after_tool = message.role == "tool"
    return out


def state_parts(message: ChatMessage, family: str) -> list[dict[str, Any]]:
    """The parts this family's state holds for ``message``, or none."""
    state = message.provider_state
    if state is None or state.provider != family:
        return []
    return [dict(obj(p)) for p in items(obj(state.data).get("parts"))]


def api_call_ids(messages: tuple[ChatMessage, ...], family: str) -> frozenset[str]:
    """Call ids the API itself gave (the adapter's synthesised ones are not on any part)."""
    return frozenset(
        text(obj(p["functionCall"]).get("id"))
        for m in messages
        for p in state_parts(m, family)
        if "functionCall" in p and text(obj(p["functionCall"]).get("id"))
    )


def replayed_parts(message: ChatMessage, family: str) -> list[dict[str, Any]]:
    """The turn's own parts, verbatim, when they still say what the message says."""
    parts = state_parts(message, family)
    calls = [obj(p["functionCall"]) for p in parts if "functionCall" in p]
    if [text(c.get("name")) for c in calls] != [c.name for c in message.tool_calls]:
        return []
    if "".join(answer_texts(parts)) != message.content:
        return []
    return [replayable(p) for p in parts]


def replayable(part: dict[str, Any]) -> dict[str, Any]:
    """``part`` as received; a call whose ``args`` is not an object goes back with ``{}``."""
    call = part.get("functionCall")
    if isinstance(call, dict) and not isinstance(call.get("args", {}), dict):
        return {**part, "functionCall": {**call, "args": {}}}
    return part


def built_parts(message: ChatMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.content or not message.tool_calls:
        parts.append({"text": message.content})
    for call in message.tool_calls:
        args = call.decoded_arguments() or {}
        parts.append({"functionCall": {"name": call.name, "args": args}})
    return parts


def function_response(
    message: ChatMessage, names: dict[str, str], given: frozenset[str]
) -> dict[str, Any]:
    call_id = message.tool_call_id or ""
    response: dict[str, Any] = {"name": names.get(call_id, ""), "response": result_of(message)}
    if call_id in given:
        response = {"id": call_id, **response}
    return {"functionResponse": response}


def result_of(message: ChatMessage) -> dict[str, Any]:
    """``{"error": text}`` or ``{"output": value}``: the keys the SDK documents."""
    if message.is_error:
        return {"error": message.content}
    return {"output": json_object(message.content)}


def json_object(content: str) -> Any:
    """``content`` decoded when it is a JSON object, else ``content`` itself."""
    if content.lstrip().startswith("{"):
        try:
            value = json.loads(content, parse_constant=_not_json)
        except (ValueError, RecursionError):
            return content
        if isinstance(value, dict):
            return value
    return content


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN would make the request body unsendable


def decode_call(entry: Any) -> ToolCall:
    call = obj(entry)
    return make_call(call.get("id"), call.get("name"), call.get("args"))
