"""The Anthropic SDK as the judge of our wire: request bodies are validated against its
``MessageCreateParams`` (strictly: unknown keys, wrong types and missing keys refused), and
answers, whole or streamed, are built from its response and raw stream event models."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from anthropic.types import (
    InputJSONDelta,
    Message,
    MessageDeltaUsage,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RedactedThinkingBlock,
    SignatureDelta,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    Usage,
)
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming,
    MessageCreateParamsStreaming,
)
from anthropic.types.raw_message_delta_event import Delta
from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaValidator

Block = TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock
Event = tuple[str, dict[str, Any]]


def _strict(node: Any) -> Any:
    """The SDK's schema with every TypedDict closed and every ``Iterable`` read eagerly (the
    SDK's own adapter would accept unknown keys and check iterables only when consumed)."""
    if isinstance(node, list):
        return [_strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v) for k, v in node.items()}
    if out.get("type") == "typed-dict":
        out["extra_behavior"] = "forbid"
    if out.get("type") == "generator":
        return {"type": "list", "items_schema": out.get("items_schema", {"type": "any"})}
    return out


_WHOLE = SchemaValidator(_strict(TypeAdapter(MessageCreateParamsNonStreaming).core_schema))
_STREAMED = SchemaValidator(_strict(TypeAdapter(MessageCreateParamsStreaming).core_schema))


def validate_request(body: dict[str, Any]) -> None:
    """Raises ``ValidationError`` unless the SDK's request type accepts ``body`` as it is."""
    validator = _STREAMED if body.get("stream") is True else _WHOLE
    validator.validate_python(body, strict=True)


def message(
    blocks: Sequence[Block],
    stop_reason: Any = "end_turn",
    *,
    usage: Usage | None = None,
    stop_details: dict[str, Any] | None = None,
    model: str = "claude-test-2026",
) -> Message:
    return Message.model_validate(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [b.model_dump() for b in blocks],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "stop_details": stop_details,
            "usage": (usage or Usage(input_tokens=11, output_tokens=7)).model_dump(),
        }
    )


def whole(msg: Message) -> dict[str, Any]:
    """The body the API sends for a non-streamed request."""
    return msg.model_dump(mode="json", exclude_none=True)


def events(msg: Message) -> list[Event]:
    """``msg`` as the API streams it: start, each block in pieces, a ping, delta, stop."""
    usage = msg.usage.model_copy(update={"output_tokens": 1})
    start = msg.model_copy(
        update={"content": [], "stop_reason": None, "stop_details": None, "usage": usage}
    )
    out: list[Any] = [RawMessageStartEvent(type="message_start", message=start)]
    for index, block in enumerate(msg.content):
        out += _block_events(index, block)
    out.append(
        RawMessageDeltaEvent(
            type="message_delta",
            delta=Delta(
                stop_reason=msg.stop_reason,
                stop_sequence=msg.stop_sequence,
                stop_details=msg.stop_details,
            ),
            usage=MessageDeltaUsage(
                output_tokens=msg.usage.output_tokens,
                input_tokens=msg.usage.input_tokens,
                cache_creation_input_tokens=msg.usage.cache_creation_input_tokens,
                cache_read_input_tokens=msg.usage.cache_read_input_tokens,
            ),
        )
    )
    out.append(RawMessageStopEvent(type="message_stop"))
    listed = [(e.type, e.model_dump(mode="json", exclude_none=True)) for e in out]
    return [listed[0], ("ping", {"type": "ping"}), *listed[1:]]


def _halves(text: str) -> list[str]:
    return [text[: len(text) // 2], text[len(text) // 2 :]]


def _block_events(index: int, block: Any) -> list[Any]:
    deltas: list[Any] = []
    if isinstance(block, TextBlock):
        first: Any = TextBlock(type="text", text="")
        deltas = [TextDelta(type="text_delta", text=t) for t in _halves(block.text)]
    elif isinstance(block, ThinkingBlock):
        first = ThinkingBlock(type="thinking", thinking="", signature="")
        deltas = [ThinkingDelta(type="thinking_delta", thinking=t) for t in _halves(block.thinking)]
        deltas.append(SignatureDelta(type="signature_delta", signature=block.signature))
    elif isinstance(block, ToolUseBlock):
        first = block.model_copy(update={"input": {}})
        arguments = json.dumps(block.input)
        deltas = [
            InputJSONDelta(type="input_json_delta", partial_json=p) for p in _halves(arguments)
        ]
    else:
        first = block  # redacted thinking comes whole in its start event
    start = RawContentBlockStartEvent(type="content_block_start", index=index, content_block=first)
    middle = [
        RawContentBlockDeltaEvent(type="content_block_delta", index=index, delta=d) for d in deltas
    ]
    return [start, *middle, RawContentBlockStopEvent(type="content_block_stop", index=index)]


def sse(stream: Sequence[Event]) -> bytes:
    """Server-sent events as the Messages API frames them: a name line and a data line."""
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in stream).encode()


# The validator itself must be able to fail, or every "validated" body proves nothing.

VALID = {
    "model": "claude-test",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Hi"}],
}


def test_the_validator_accepts_a_minimal_body() -> None:
    validate_request(VALID)
    validate_request({**VALID, "stream": True})


@pytest.mark.parametrize(
    "body",
    [
        {**VALID, "temperature": 0.2},  # not a parameter of the pinned SDK
        {**VALID, "max_tokens": "64"},
        {k: v for k, v in VALID.items() if k != "model"},
        {**VALID, "messages": [{"role": "user", "content": [{"type": "text"}]}]},
        {**VALID, "messages": [{"role": "user", "content": "Hi", "name": "x"}]},
        {**VALID, "tool_choice": {"type": "nothing"}},
        {**VALID, "thinking": {"type": "enabled"}},
        {**VALID, "stream": False, "extra": 1},
    ],
)
def test_the_validator_refuses_unknown_keys_wrong_types_and_missing_keys(
    body: dict[str, Any],
) -> None:
    with pytest.raises(ValidationError):
        validate_request(body)


def test_streamed_fixtures_are_the_sdk_event_shapes() -> None:
    msg = message([TextBlock(type="text", text="Hello")])
    names = [name for name, _ in events(msg)]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
