"""Anthropic Messages API.

Wire shape: ``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``.
- Every system message is kept: they are joined by blank lines into the top-level ``system``.
- Tools go as ``{name, description, input_schema}``, always with an explicit ``tool_choice``
  (anthropic-sdk ``ToolChoiceParam``): ``{"type": "auto"}``, ``{"type": "none"}`` (tools still
  sent: the API refuses a history of tool blocks when no tool is defined), ``{"type": "any"}``
  for "required", ``{"type": "tool", "name"}`` for one tool.
- A run's output schema is one more tool the model answers with (:mod:`toolwire.providers.
  answer_tool`): its call becomes the turn's text.
- An assistant turn with calls becomes content blocks: its text (when there is any), then one
  ``tool_use`` block per call whose ``input`` is the decoded arguments (``{}`` when the model's
  text was not a JSON object: the API accepts only an object there). Such a turn without text
  gets the server's ``Quirks.tool_use_text`` as its text block, when the server needs one
  (``presets.quirks_for``: none at Anthropic's own URL); a turn replayed from its state is not
  touched.
- An assistant turn this family decoded carries its content blocks as provider state (thinking
  with its signature, redacted thinking, text, tool uses, in order); it goes back verbatim, as
  the API requires of thinking blocks and of a paused turn.
- Consecutive tool turns become ONE user turn of ``tool_result`` blocks, each carrying the tool
  turn's ``is_error``; ``content`` is the bounded tool result string and nothing else.
- ``max_tokens`` is required by the API; ``DEFAULT_MAX_TOKENS`` when the request sets none.
  Thinking counts towards it, so with a thinking budget it is at least the budget plus
  ``ANSWER_HEADROOM_TOKENS``.
- No ``temperature``: the Messages API parameters (SDK 2.x) have none, and newer models refuse it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from toolwire.core.messages import ChatMessage, ProviderState, ToolCall, ToolSpec
from toolwire.providers.answer_tool import (
    DESCRIPTION,
    answer_tool_name,
    as_answer,
    forced,
    input_schema,
)
from toolwire.providers.anthropic_stream import StreamedMessage
from toolwire.providers.base import (
    UNKNOWN_USAGE,
    CompletionRequest,
    CompletionResponse,
    DeltaSink,
    Reasoning,
    Stop,
    Usage,
)
from toolwire.providers.presets import ANTHROPIC_BASE_URL
from toolwire.providers.wire import (
    Assembly,
    HttpProvider,
    count,
    malformed,
    obj,
    system_text,
    text,
    tool_call,
    tool_description,
)

DEFAULT_BASE_URL = ANTHROPIC_BASE_URL
API_VERSION = "2023-06-01"  # the Messages API version this adapter's shapes follow
DEFAULT_MAX_TOKENS = 4096  # the API requires a cap; enough for a tool-using answer
MIN_THINKING_BUDGET = 1024  # the API refuses a smaller budget_tokens
ANSWER_HEADROOM_TOKENS = 1024  # room left for the answer after a full thinking budget
REFUSAL_NOTE = "The model declined to answer."  # a refusal that came with no text
STOPS = {
    "end_turn": Stop.END,
    "stop_sequence": Stop.END,
    "tool_use": Stop.TOOL_CALLS,
    "max_tokens": Stop.MAX_TOKENS,
    "model_context_window_exceeded": Stop.CONTEXT_WINDOW,
    "refusal": Stop.REFUSAL,
    "pause_turn": Stop.PAUSED,
}
# Blocks whose presence alone is no reason to keep the turn's blocks as provider state.
_PLAIN_BLOCKS = frozenset({"text", "tool_use"})


class AnthropicProvider(HttpProvider):
    """Claude through the Messages API."""

    default_name = "anthropic"
    default_base_url = DEFAULT_BASE_URL

    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key, "anthropic-version": API_VERSION}

    def assembly(self, on_delta: DeltaSink | None) -> StreamedMessage:
        return StreamedMessage(on_delta)

    def assembled(self, assembly: Assembly) -> Any:
        if isinstance(assembly, StreamedMessage) and not assembly.finished:
            # a cut stream must not pass for a whole, shorter answer
            raise malformed(self.name, "stream ended before message_stop")
        return assembly.body()

    def encode(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": encode_messages(request.messages, self.family, self.quirks.tool_use_text),
        }
        system = system_text(request.messages)
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [encode_tool(t, self.quirks.description_chars) for t in request.tools]
            body["tool_choice"] = encode_choice(request.tool_choice)
        if request.output is not None:
            body.update(encode_answer_tool(request, body.get("tools", [])))
        if request.reasoning is not None:
            body.update(thinking_fields(request.reasoning, body["max_tokens"]))
        if request.stream:
            body["stream"] = True
        return body

    def shaped(
        self, response: CompletionResponse, request: CompletionRequest
    ) -> CompletionResponse:
        return as_answer(response, request)  # the answer tool's call is the answer

    def decode(self, body: Any) -> CompletionResponse:
        body = obj(body)
        blocks = body.get("content")
        if not isinstance(blocks, list):
            raise malformed(self.name, "has no content blocks")
        blocks = [obj(b) for b in blocks]
        calls = tuple(
            tool_call(b.get("id"), b.get("name"), b.get("input"))
            for b in blocks
            if b.get("type") == "tool_use"
        )
        content = "".join(text(b.get("text")) for b in blocks if b.get("type") == "text")
        thinking = [text(b.get("thinking")) for b in blocks if b.get("type") == "thinking"]
        word = text(body.get("stop_reason"))
        stop = stop_of(word, calls)
        return CompletionResponse(
            content=content,
            tool_calls=calls,
            usage=usage_of(obj(body.get("usage"))) if "usage" in body else UNKNOWN_USAGE,
            stop=stop,
            finish_reason=word or None,
            refusal=refusal_of(content, body) if stop is Stop.REFUSAL else None,
            thinking="\n\n".join(t for t in thinking if t) or None,
            model=text(body.get("model")) or None,
            provider_state=self.state_of(blocks, calls, stop),
            response_id=text(body.get("id")) or None,
        )

    def state_of(
        self, blocks: list[Mapping[str, Any]], calls: tuple[ToolCall, ...], stop: Stop
    ) -> ProviderState | None:
        """The turn's blocks as they must go back, when anything in them must go back as is."""
        kinds = {text(b.get("type")) for b in blocks} - {""}
        if kinds <= _PLAIN_BLOCKS and stop is not Stop.PAUSED:
            return None
        replayed = list(replay_blocks(blocks, iter(calls)))
        return ProviderState(self.family, {"content": replayed})


def encode_answer_tool(request: CompletionRequest, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's output schema as one more tool (:mod:`toolwire.providers.answer_tool`), forced
    when the answer is due now. Thinking allows no forced tool: the choice then stays auto."""
    assert request.output is not None
    name = answer_tool_name(request)
    tool = {"name": name, "description": DESCRIPTION, "input_schema": input_schema(request.output)}
    out: dict[str, Any] = {"tools": [*tools, tool]}
    if forced(request):
        choice = (
            {"type": "auto"} if request.reasoning is not None else {"type": "tool", "name": name}
        )
        out["tool_choice"] = choice
    elif not tools:
        out["tool_choice"] = {"type": "auto"}
    return out


def encode_choice(choice: str) -> dict[str, str]:
    if choice == "required":
        return {"type": "any"}
    if choice in ("auto", "none"):
        return {"type": choice}
    return {"type": "tool", "name": choice}


def stop_of(word: str, calls: tuple[ToolCall, ...]) -> Stop:
    if not word:  # a body without a stop reason: judge by what it holds
        return Stop.TOOL_CALLS if calls else Stop.END
    return STOPS.get(word, Stop.OTHER)


def usage_of(usage: Mapping[str, Any]) -> Usage:
    """``input_tokens`` excludes the cached part: cache writes and reads are added to it."""
    written = count(usage.get("cache_creation_input_tokens"))
    read = count(usage.get("cache_read_input_tokens"))
    return Usage(
        prompt_tokens=count(usage.get("input_tokens")) + written + read,
        completion_tokens=count(usage.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def refusal_of(content: str, body: Mapping[str, Any]) -> str:
    """The turn's text, else the refusal's explanation, else a fixed note."""
    explanation = text(obj(body.get("stop_details")).get("explanation"))
    return content or explanation or REFUSAL_NOTE


def thinking_fields(reasoning: Reasoning, max_tokens: int) -> dict[str, Any]:
    budget = max(reasoning.budget, MIN_THINKING_BUDGET)
    return {
        "thinking": {"type": "enabled", "budget_tokens": budget},
        "max_tokens": max(max_tokens, budget + ANSWER_HEADROOM_TOKENS),
    }


def replay_blocks(
    blocks: list[Mapping[str, Any]], calls: Iterator[ToolCall]
) -> Iterator[dict[str, Any]]:
    """Each block in the request's shape; a tool use as decoded (its id, its object input)."""
    for block in blocks:
        kind = text(block.get("type"))
        if kind == "tool_use":
            call = next(calls)
            yield {"type": "tool_use", "id": call.id, "name": call.name,
                   "input": call.decoded_arguments() or {}}  # fmt: skip
        elif kind == "text":
            yield {"type": "text", "text": text(block.get("text"))}
        elif kind == "thinking":
            yield {"type": "thinking", "thinking": text(block.get("thinking")),
                   "signature": text(block.get("signature"))}  # fmt: skip
        elif kind == "redacted_thinking":
            yield {"type": "redacted_thinking", "data": text(block.get("data"))}
        elif kind:  # a server tool's block: back as it came
            yield {k: v for k, v in block.items() if v is not None}


def encode_tool(spec: ToolSpec, description_chars: int) -> dict[str, Any]:
    description = tool_description(spec, description_chars)
    return {"name": spec.name, "description": description, "input_schema": spec.parameters}


def encode_messages(
    messages: tuple[ChatMessage, ...], family: str, tool_use_text: str = ""
) -> list[dict[str, Any]]:
    """The Messages API's turns; ``tool_use_text``: the text block a turn of tool uses alone
    gets (the server's quirk; "" for none)."""
    return turns_of(messages, family, tool_result_block,
                    lambda message: encode_turn(message, tool_use_text))  # fmt: skip


def turns_of(
    messages: tuple[ChatMessage, ...],
    family: str,
    result_block: Callable[[ChatMessage], dict[str, Any]],
    turn: Callable[[ChatMessage], dict[str, Any]],
) -> list[dict[str, Any]]:
    """The turns of an API of content blocks (the Messages API, Bedrock's Converse): system
    messages left out (they go apart), consecutive tool results as ONE user turn of their
    ``result_block``s, an assistant turn this ``family`` kept as it was kept, any other as
    its ``turn``."""
    out: list[dict[str, Any]] = []
    after_tool = False
    for message in messages:
        if message.role == "system":
            continue  # sent as the top-level ``system``
        if message.role == "tool" and after_tool:
            out[-1]["content"].append(result_block(message))
        elif message.role == "tool":
            out.append({"role": "user", "content": [result_block(message)]})
        else:  # verbatim, as the APIs require of thinking blocks
            out.append(replayed_turn(message, family) or turn(message))
        after_tool = message.role == "tool"
    return out


def replayed_turn(message: ChatMessage, family: str) -> dict[str, Any] | None:
    """The assistant turn exactly as this family's adapter kept it, if it kept it."""
    state = message.provider_state
    if state is None or state.provider != family:
        return None  # another family's state never goes on this wire
    blocks = obj(state.data).get("content")
    if not isinstance(blocks, list) or not blocks:
        return None
    return {"role": "assistant", "content": list(blocks)}


def encode_turn(message: ChatMessage, tool_use_text: str = "") -> dict[str, Any]:
    """A user turn, or an assistant turn as blocks; one of calls whose text is none (or only
    whitespace, which proxies drop) gets ``tool_use_text`` too, when that is not ""."""
    if not message.tool_calls:
        return {"role": message.role, "content": message.content}
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    if tool_use_text and not message.content.strip():
        blocks.append({"type": "text", "text": tool_use_text})
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
