"""Amazon Bedrock's Converse and ConverseStream APIs.

Wire shape (botocore's ``bedrock-runtime`` service model, ``ConverseRequest``):
``POST {base_url}/model/{modelId}/converse`` (``/converse-stream`` for a stream, answered in
AWS's binary event stream: :mod:`toolwire.providers.eventstream`), signed with SigV4
(:mod:`toolwire.providers.aws_auth`); the base URL is
``https://bedrock-runtime.{region}.amazonaws.com`` unless another is given. The model id (an
ARN or an inference profile too) is percent-encoded whole in the path, as botocore encodes it.
- Every system message is kept: joined by blank lines into one ``system`` text block.
- Tools go in ``toolConfig.tools`` as ``toolSpec {name, description, inputSchema.json}``;
  ``toolChoice`` is ``{auto: {}}``, ``{any: {}}`` for "required", ``{tool: {name}}`` for one
  tool. Converse has no "none" choice: the tools still go (Bedrock refuses a history of tool
  blocks without a ``toolConfig``) with the default choice, and a call then is the loop's to
  deal with.
- A run's output schema is one more tool the model answers with, forced by ``toolChoice.tool``
  when due (:mod:`toolwire.providers.answer_tool`), as for Anthropic.
- An assistant turn is content blocks: its text (when it has any that is not blank: Bedrock
  refuses blank text), then one ``toolUse {toolUseId, name, input}`` per call, ``input`` the
  decoded arguments (``{}`` when they were not an object).
- Consecutive tool turns become ONE user turn of ``toolResult`` blocks, each with the bounded
  tool result string as its one ``text`` content and ``status`` ``error`` for a failed call
  (else ``success``).
- An assistant turn with reasoning (``reasoningContent``: ``reasoningText`` with its
  ``signature``, or ``redactedContent``) keeps its blocks as provider state; they go back
  verbatim to this family only, as the models that reason require.
- ``inferenceConfig`` carries ``maxTokens`` and ``temperature`` when the request sets them; a
  reasoning budget goes as Anthropic's ``thinking`` in ``additionalModelRequestFields`` (the
  Claude models' field on Bedrock), ``maxTokens`` then at least the budget plus headroom.
- The trust zone is ``external_eu`` for a model called in a region of an EU member state (and
  not through a cross-region profile, which may route elsewhere), else ``external_global``;
  the caller's zone wins.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

from toolwire.core.messages import ChatMessage, ProviderState, ToolCall, ToolSpec
from toolwire.core.trust import TrustZone, region_zone
from toolwire.providers.answer_tool import (
    DESCRIPTION,
    answer_tool_name,
    as_answer,
    forced,
    input_schema,
)
from toolwire.providers.anthropic import ANSWER_HEADROOM_TOKENS, DEFAULT_MAX_TOKENS, turns_of
from toolwire.providers.aws_auth import AwsCredentials, SigV4Signer
from toolwire.providers.base import (
    UNKNOWN_USAGE,
    CompletionRequest,
    CompletionResponse,
    DeltaSink,
    Reasoning,
    Stop,
    Usage,
)
from toolwire.providers.bedrock_stream import StreamedConverse
from toolwire.providers.eventstream import aws_event_stream
from toolwire.providers.http import HttpSettings, Signer
from toolwire.providers.presets import Quirks
from toolwire.providers.sse import StreamFormat
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

MIN_THINKING_BUDGET = 1024  # Anthropic's models refuse a smaller budget_tokens
BLOCKED_NOTE = "A content filter or guardrail stopped the answer."  # a block that came silent
STOPS = {
    "end_turn": Stop.END,
    "stop_sequence": Stop.END,
    "tool_use": Stop.TOOL_CALLS,
    "max_tokens": Stop.MAX_TOKENS,
    "model_context_window_exceeded": Stop.CONTEXT_WINDOW,
    "guardrail_intervened": Stop.BLOCKED,
    "content_filtered": Stop.BLOCKED,
    "malformed_tool_use": Stop.MALFORMED_CALL,
}
# The HTTP status of each error ConverseStream may send inside its stream (the service model's
# ``ConverseStreamOutput`` members and their shapes' ``httpStatusCode``; a test holds them equal).
STREAM_ERROR_STATUSES = {
    "internalServerException": 500,
    "modelStreamErrorException": 424,
    "validationException": 400,
    "throttlingException": 429,
    "serviceUnavailableException": 503,
}
_PROFILE_PREFIXES = ("global.", "us.", "eu.", "apac.", "us-gov.", "jp.", "au.", "ca.")
_STREAM_FORMAT = aws_event_stream(STREAM_ERROR_STATUSES)
_PLAIN_BLOCKS = frozenset({"text", "toolUse"})


def regional_url(region: str) -> str:
    """Bedrock's runtime endpoint in ``region``."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


def zone_for(region: str, model: str) -> TrustZone:
    """``external_eu`` for a model served in an EU member state's region; else the least
    trusted zone (a cross-region profile may route anywhere its geography allows)."""
    routed = model.startswith((*_PROFILE_PREFIXES, "arn:"))  # a profile, or what an ARN names
    return TrustZone.EXTERNAL_GLOBAL if routed else region_zone(region)


class BedrockProvider(HttpProvider):
    """A model on Amazon Bedrock through the Converse API."""

    default_name = "bedrock"
    default_base_url = ""  # per region: ``regional_url(region)``

    def __init__(
        self,
        *,
        model: str,
        credentials: AwsCredentials,
        base_url: str | None = None,
        trust_zone: TrustZone | str | None = None,
        http: HttpSettings | None = None,
        name: str | None = None,
        context_window: int | None = None,
    ) -> None:
        self.credentials = credentials
        self.region = credentials.region
        self._signer = SigV4Signer(name or self.default_name, credentials)
        zone = trust_zone if trust_zone is not None else zone_for(self.region, model.strip())
        super().__init__(
            model=model,
            api_key="",
            base_url=base_url or regional_url(self.region),
            trust_zone=zone,
            http=http,
            name=name,
            context_window=context_window,
            quirks=Quirks(),
        )

    def __repr__(self) -> str:  # never the credentials
        return f"<BedrockProvider model={self.model!r} region={self.region!r}>"

    @property
    def pricing_family(self) -> str | None:
        """The price table's family (genai-prices' ``aws``), at the region's own endpoint only."""
        return self.family if self.base_url == regional_url(self.region) else None

    def signer(self) -> Signer:
        return self._signer

    def url(self) -> str:
        return f"{self.base_url}/model/{quote(self.model, safe='')}/converse"

    def stream_url(self) -> str:
        return f"{self.base_url}/model/{quote(self.model, safe='')}/converse-stream"

    def stream_format(self) -> StreamFormat:
        return _STREAM_FORMAT

    def headers(self, api_key: str) -> dict[str, str]:
        return {}  # the signer adds the credentials

    def assembly(self, on_delta: DeltaSink | None) -> StreamedConverse:
        return StreamedConverse(on_delta)

    def assembled(self, assembly: Assembly) -> Any:
        if isinstance(assembly, StreamedConverse) and not assembly.finished:
            raise malformed(self.name, "stream ended before messageStop")
        return assembly.body()

    def encode(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": encode_messages(request.messages, self.family)}
        system = system_text(request.messages)
        if system.strip():
            body["system"] = [{"text": system}]
        inference = inference_config(request)
        if request.reasoning is not None:
            body["additionalModelRequestFields"] = thinking_field(request.reasoning, inference)
        if inference:
            body["inferenceConfig"] = inference
        if request.tools:
            tools = [encode_tool(t, self.quirks.description_chars) for t in request.tools]
            body["toolConfig"] = {"tools": tools, **encode_choice(request.tool_choice)}
        if request.output is not None:
            body["toolConfig"] = encode_answer_tool(request, body.get("toolConfig"))
        return body

    def shaped(
        self, response: CompletionResponse, request: CompletionRequest
    ) -> CompletionResponse:
        return as_answer(response, request)  # the answer tool's call is the answer

    def decode(self, body: Any) -> CompletionResponse:
        body = obj(body)
        blocks = obj(obj(obj(body.get("output")).get("message"))).get("content")
        if not isinstance(blocks, list):
            raise malformed(self.name, "has no output message content")
        blocks = [obj(b) for b in blocks]
        uses = [obj(b.get("toolUse")) for b in blocks if "toolUse" in b]
        calls = tuple(tool_call(u.get("toolUseId"), u.get("name"), u.get("input")) for u in uses)
        content = "".join(text(b.get("text")) for b in blocks)
        thoughts = [text(_reasoning_text(b).get("text")) for b in blocks]
        word = text(body.get("stopReason"))
        stop = STOPS.get(word, Stop.OTHER) if word else (Stop.TOOL_CALLS if calls else Stop.END)
        return CompletionResponse(
            content=content,
            tool_calls=calls,
            usage=usage_of(obj(body.get("usage"))) if "usage" in body else UNKNOWN_USAGE,
            stop=stop,
            finish_reason=word or None,
            refusal=(content or BLOCKED_NOTE) if stop is Stop.BLOCKED else None,
            thinking="\n\n".join(t for t in thoughts if t) or None,
            provider_state=self.state_of(blocks, calls),
        )

    def state_of(
        self, blocks: list[Mapping[str, Any]], calls: tuple[ToolCall, ...]
    ) -> ProviderState | None:
        """The turn's blocks as they must go back, when it reasoned."""
        if all(set(b) <= _PLAIN_BLOCKS for b in blocks):
            return None
        return ProviderState(self.family, {"content": list(replay_blocks(blocks, iter(calls)))})


def _reasoning_text(block: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj(obj(block.get("reasoningContent")).get("reasoningText"))


def inference_config(request: CompletionRequest) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if request.max_tokens is not None:
        config["maxTokens"] = request.max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    return config


def thinking_field(reasoning: Reasoning, inference: dict[str, Any]) -> dict[str, Any]:
    """Anthropic's thinking on Bedrock; ``inference``'s ``maxTokens`` raised to leave room to
    answer after a full budget (thinking counts towards it)."""
    budget = max(reasoning.budget, MIN_THINKING_BUDGET)
    cap = inference.get("maxTokens") or DEFAULT_MAX_TOKENS
    inference["maxTokens"] = max(cap, budget + ANSWER_HEADROOM_TOKENS)
    return {"thinking": {"type": "enabled", "budget_tokens": budget}}


def encode_answer_tool(
    request: CompletionRequest, given: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``toolConfig`` with the run's output schema as one more tool, forced when the answer is
    due now (with reasoning, which allows no forced tool, the choice stays auto)."""
    assert request.output is not None
    name = answer_tool_name(request)
    spec = {"name": name, "description": DESCRIPTION,
            "inputSchema": {"json": input_schema(request.output)}}  # fmt: skip
    config: dict[str, Any] = dict(given or {})
    config["tools"] = [*config.get("tools", []), {"toolSpec": spec}]
    if forced(request) and request.reasoning is None:
        config["toolChoice"] = {"tool": {"name": name}}
    elif forced(request):
        config["toolChoice"] = {"auto": {}}
    return config


def encode_choice(choice: str) -> dict[str, Any]:
    """``toolChoice`` for a tool choice; none for "none", which Converse lacks."""
    if choice == "none":
        return {}
    if choice == "auto":
        return {"toolChoice": {"auto": {}}}
    if choice == "required":
        return {"toolChoice": {"any": {}}}
    return {"toolChoice": {"tool": {"name": choice}}}


def usage_of(usage: Mapping[str, Any]) -> Usage:
    """``inputTokens`` excludes the cached part: cache reads and writes are added to it."""
    read = count(usage.get("cacheReadInputTokens"))
    written = count(usage.get("cacheWriteInputTokens"))
    return Usage(
        prompt_tokens=count(usage.get("inputTokens")) + read + written,
        completion_tokens=count(usage.get("outputTokens")),
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def encode_tool(spec: ToolSpec, description_chars: int) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": spec.name, "inputSchema": {"json": spec.parameters}}
    description = tool_description(spec, description_chars)
    if description:  # a NonEmptyString in the model: an empty one is refused
        tool["description"] = description
    return {"toolSpec": tool}


def encode_messages(messages: tuple[ChatMessage, ...], family: str) -> list[dict[str, Any]]:
    """Converse's turns: consecutive tool results are one user turn (as the Messages API's)."""
    return turns_of(messages, family, tool_result_block, encode_turn)


def encode_turn(message: ChatMessage) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    if message.content.strip() or not message.tool_calls:
        blocks.append({"text": message.content})
    for call in message.tool_calls:
        arguments = call.decoded_arguments() or {}
        blocks.append({"toolUse": {"toolUseId": call.id, "name": call.name, "input": arguments}})
    return {"role": "assistant" if message.role == "assistant" else "user", "content": blocks}


def tool_result_block(message: ChatMessage) -> dict[str, Any]:
    return {
        "toolResult": {
            "toolUseId": message.tool_call_id,
            "content": [{"text": message.content}],
            "status": "error" if message.is_error else "success",
        }
    }


def replay_blocks(
    blocks: list[Mapping[str, Any]], calls: Iterator[ToolCall]
) -> Iterator[dict[str, Any]]:
    """Each block in the request's shape; a tool use as decoded (its id, its object input)."""
    for block in blocks:
        if "toolUse" in block:
            call = next(calls)
            yield {"toolUse": {"toolUseId": call.id, "name": call.name,
                               "input": call.decoded_arguments() or {}}}  # fmt: skip
        elif "text" in block:
            yield {"text": text(block.get("text"))}
        elif "reasoningContent" in block:
            yield {"reasoningContent": _reasoning_block(obj(block.get("reasoningContent")))}


def _reasoning_block(reasoning: Mapping[str, Any]) -> dict[str, Any]:
    if "redactedContent" in reasoning:
        return {"redactedContent": text(reasoning.get("redactedContent"))}
    said = obj(reasoning.get("reasoningText"))
    out = {"text": text(said.get("text"))}
    if text(said.get("signature")):
        out["signature"] = text(said.get("signature"))
    return {"reasoningText": out}
