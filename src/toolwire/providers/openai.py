"""OpenAI Chat Completions, and every server that speaks it (set ``base_url``).

Wire shape: ``POST {base_url}/chat/completions`` with ``Authorization: Bearer <key>`` (no
header at all for a keyless server on a loopback or private address, see ``presets``).
- Tools go as ``{"type": "function", "function": {name, description, parameters}}``; a request
  without tools has no ``tools`` key at all. With tools, ``tool_choice`` is always sent
  (openai-python ``ChatCompletionToolChoiceOptionParam``): ``"auto"``, ``"none"``,
  ``"required"``, or ``{"type": "function", "function": {"name"}}`` for one tool. A server
  that does not take the named form (``Quirks.named_tool_choice``) gets ``"required"`` with
  that tool alone. Servers differ on what a missing choice means (llama-cpp-python: no tools;
  vLLM: none), so it is never left to them.
- An assistant turn's calls are replayed with their arguments text when it is a JSON object,
  else ``{}`` (servers that parse the history refuse broken JSON in every later turn). Its
  ``content``, when it has no text, is what the server's quirks say: null, absent or ``""``.
- Every server difference is read from one ``Quirks`` value (``presets``), never decided here.
- Tool turns are ``{"role": "tool", "tool_call_id", "content"}``; ``content`` is the bounded
  tool result string and nothing else.
- Reasoning goes as ``reasoning_effort`` (OpenAI, vLLM, Ollama, LM Studio) or OpenRouter's
  ``reasoning: {"effort"}`` / ``{"max_tokens"}``; it arrives as ``reasoning_content`` (vLLM,
  DeepSeek), ``reasoning`` (OpenRouter), ``thinking`` chunks of a content list (Mistral) or
  inline ``<think>`` blocks, and becomes ``thinking``.
  A server that wants it back (``Quirks.replays_reasoning``: DeepSeek) gets it on the turn it
  came with, as ``reasoning_content``, from the turn's provider state.
- Streaming (``stream: true``) is assembled by ``openai_stream`` into the body a whole call
  returns, and decoded by the same ``decode``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from toolwire.core.errors import ConfigError
from toolwire.core.messages import ChatMessage, ProviderState, ToolCall, ToolSpec
from toolwire.core.output import OutputSchema
from toolwire.core.trust import TrustZone
from toolwire.providers.base import (
    EFFORT_BUDGETS,
    TOOL_CHOICE_MODES,
    UNKNOWN_USAGE,
    CompletionRequest,
    CompletionResponse,
    DeltaSink,
    Reasoning,
    Stop,
    Usage,
)
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai_stream import REASONING_KEYS, ChunkAssembler, content_parts
from toolwire.providers.presets import (
    OPENAI_BASE_URL,
    MaxTokensField,
    Quirks,
    ReasoningField,
    ToolCallContent,
    is_private_url,
    table_prices,
)
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
    tool_description,
)

DEFAULT_BASE_URL = OPENAI_BASE_URL
# OpenAI's current name for the output cap; the compatible servers want "max_tokens".
DEFAULT_MAX_TOKENS_FIELD: MaxTokensField = "max_completion_tokens"
STOPS = {
    "stop": Stop.END,
    "tool_calls": Stop.TOOL_CALLS,
    "function_call": Stop.TOOL_CALLS,  # the deprecated single-function form
    "length": Stop.MAX_TOKENS,
    "content_filter": Stop.BLOCKED,
}


def needs_key(provider: HttpProvider) -> bool:
    """Whether a call of an OpenAI-shaped API needs a key: a hosted server's does, a loopback
    or private one's not (a cloud route with a bearer token says no)."""
    return not is_private_url(provider.base_url)


def check_key(provider: HttpProvider, key: str | None, *, needed: bool) -> None:
    """A ``ConfigError`` when ``provider`` was given no key and its calls need one (``needed``:
    its ``needs_key``, which a cloud route with a bearer token answers no)."""
    if not key and needed:
        raise ConfigError(f"{provider.name}: an API key is required for {provider.base_url}")


class OpenAIProvider(HttpProvider):
    """Chat Completions with tools."""

    default_name = "openai"
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        trust_zone: TrustZone | str = DEFAULT_TRUST_ZONE,
        http: HttpSettings | None = None,
        name: str | None = None,
        quirks: Quirks | None = None,
        max_tokens_field: MaxTokensField | None = None,
        reasoning_field: ReasoningField | None = None,
        stream_usage: bool | None = None,
        price_table: str | None = None,
        context_window: int | None = None,
    ) -> None:
        """``quirks`` None: OpenAI's own for its URL, the common compatible ones elsewhere;
        the three single fields override the quirks they name."""
        key = (api_key or "").strip()
        super().__init__(
            model=model,
            api_key=key,
            base_url=base_url,
            trust_zone=trust_zone,
            http=http,
            name=name,
            context_window=context_window,
            quirks=quirks,
        )
        check_key(self, key, needed=self.needs_key())
        quirks = self.quirks
        self.quirks = dataclasses.replace(
            quirks,
            max_tokens_field=max_tokens_field or quirks.max_tokens_field,
            reasoning_field=reasoning_field or quirks.reasoning_field,
            stream_usage=quirks.stream_usage if stream_usage is None else stream_usage,
        )
        self.price_table = price_table

    def needs_key(self) -> bool:
        return needs_key(self)

    @property
    def max_tokens_field(self) -> MaxTokensField:
        return self.quirks.max_tokens_field

    @property
    def reasoning_field(self) -> ReasoningField:
        return self.quirks.reasoning_field

    @property
    def stream_usage(self) -> bool:
        return self.quirks.stream_usage  # stream_options.include_usage, where servers take it

    def streams(self, request: CompletionRequest) -> bool:
        """A server whose stream of a tool call is empty gets requests offering tools whole."""
        offering = bool(request.tools) and request.tool_choice != "none"
        return self.quirks.streams_tool_calls or not offering

    @property
    def pricing_family(self) -> str | None:
        """A named price table when it lists this model (OpenRouter), else the vendor rule."""
        if self.price_table is not None:
            return self.price_table if table_prices(self.price_table, self.model) else None
        return super().pricing_family

    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def assembly(self, on_delta: DeltaSink | None) -> ChunkAssembler:
        return ChunkAssembler(on_delta)

    def encode(self, request: CompletionRequest) -> dict[str, Any]:
        content = self.quirks.tool_call_content
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [self.encode_turn(m, content) for m in request.messages],
        }
        if request.stream:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}
        if request.tools:
            body.update(self.encode_tools(request))
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body[self.max_tokens_field] = request.max_tokens
        if request.reasoning is not None:
            body.update(self.encode_reasoning(request.reasoning))
        if request.output is not None:
            body["response_format"] = encode_output(request.output)
        return body

    def encode_turn(self, message: ChatMessage, content: ToolCallContent) -> dict[str, Any]:
        """One message; an assistant turn with its reasoning, where the server wants it back."""
        turn = encode_message(message, content)
        reasoning = self.replayed_reasoning(message)
        return turn | {"reasoning_content": reasoning} if reasoning else turn

    def replayed_reasoning(self, message: ChatMessage) -> str:
        """The reasoning this family's adapter kept on ``message``, if this server wants it."""
        state = message.provider_state
        if not self.quirks.replays_reasoning or state is None or state.provider != self.family:
            return ""  # another family's state never goes on this wire
        return text(obj(state.data).get("reasoning_content"))

    def state_of(self, reasoning: str) -> ProviderState | None:
        """The turn's reasoning as provider state, for a server that wants it back."""
        if not self.quirks.replays_reasoning or not reasoning:
            return None
        return ProviderState(self.family, {"reasoning_content": reasoning})

    def encode_tools(self, request: CompletionRequest) -> dict[str, Any]:
        """``tools`` and ``tool_choice``, the choice always explicit."""
        choice = request.tool_choice
        tools = request.tools
        chars = self.quirks.description_chars
        if choice in TOOL_CHOICE_MODES:
            return {"tools": [encode_tool(t, chars) for t in tools], "tool_choice": choice}
        if not self.quirks.named_tool_choice:  # only that tool, and some call required
            chosen = [t for t in tools if t.name == choice] or list(tools)
            return {"tools": [encode_tool(t, chars) for t in chosen], "tool_choice": "required"}
        named = {"type": "function", "function": {"name": choice}}
        return {"tools": [encode_tool(t, chars) for t in tools], "tool_choice": named}

    def encode_reasoning(self, reasoning: Reasoning) -> dict[str, Any]:
        if self.reasoning_field == "reasoning":  # OpenRouter: an effort or a token budget
            if reasoning.effort is not None:
                return {"reasoning": {"effort": reasoning.effort}}
            return {"reasoning": {"max_tokens": reasoning.budget}}
        return {"reasoning_effort": effort_of(reasoning)}

    def decode(self, body: Any) -> CompletionResponse:
        body = obj(body)
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise malformed(self.name, "has no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise malformed(self.name, "choice has no message")
        answer, chunked_thinking = content_parts(message.get("content"))
        content, inline_thinking = split_think(answer)
        calls = tuple(decode_call(c) for c in items(message.get("tool_calls")))
        finish_reason = text(choices[0].get("finish_reason")) or None
        refusal = text(message.get("refusal")) or None
        reasoning = reasoning_text(message)
        return CompletionResponse(
            content=content,
            tool_calls=calls,
            usage=decode_usage(body.get("usage")),
            stop=stop_of(finish_reason, refusal, calls),
            finish_reason=finish_reason,
            refusal=refusal,
            provider_state=self.state_of(reasoning),
            thinking=reasoning or chunked_thinking or inline_thinking,
            model=text(body.get("model")) or None,
            response_id=text(body.get("id")) or None,
        )


def effort_of(reasoning: Reasoning) -> str:
    """The effort level, or the one whose budget is nearest (by ratio) to a budget-only ask."""
    if reasoning.effort is not None:
        return reasoning.effort
    budget = math.log(reasoning.budget)
    return min(EFFORT_BUDGETS, key=lambda e: abs(math.log(EFFORT_BUDGETS[e]) - budget))


def stop_of(finish_reason: str | None, refusal: str | None, calls: tuple[ToolCall, ...]) -> Stop:
    if refusal is not None:
        return Stop.REFUSAL
    if finish_reason is None:
        return Stop.TOOL_CALLS if calls else Stop.END
    return STOPS.get(finish_reason, Stop.OTHER)


def decode_usage(value: Any) -> Usage:
    """The body's usage; ``UNKNOWN`` when it has none (a stream that was sent no usage)."""
    if not isinstance(value, dict):
        return UNKNOWN_USAGE
    usage = value
    return Usage(
        prompt_tokens=count(usage.get("prompt_tokens")),
        completion_tokens=count(usage.get("completion_tokens")),
        cache_read_tokens=count(obj(usage.get("prompt_tokens_details")).get("cached_tokens")),
        reasoning_tokens=count(obj(usage.get("completion_tokens_details")).get("reasoning_tokens")),
    )


def reasoning_text(message: dict[str, Any]) -> str:
    return next((text(message.get(k)) for k in REASONING_KEYS if text(message.get(k))), "")


def encode_output(output: OutputSchema) -> dict[str, Any]:
    """The run's answer schema as ``response_format`` (Chat Completions' structured output)."""
    schema = {"name": output.name, "schema": dict(output.schema), "strict": output.strict}
    return {"type": "json_schema", "json_schema": schema}


def encode_tool(spec: ToolSpec, description_chars: int) -> dict[str, Any]:
    description = tool_description(spec, description_chars)
    function = {"name": spec.name, "description": description, "parameters": spec.parameters}
    return {"type": "function", "function": function}


def encode_message(message: ChatMessage, empty: ToolCallContent = "null") -> dict[str, Any]:
    """One message; ``empty`` is the content of a turn with calls and no text (the quirk)."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        turn: dict[str, Any] = {"role": "assistant"}
        if message.content or empty != "absent":
            turn["content"] = message.content or ("" if empty == "empty" else None)
        return turn | {
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
