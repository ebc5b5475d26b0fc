"""OpenAI's Responses API, and every server that speaks it (set ``base_url``, ``path``, ``auth``).

Wire shape (openai-python ``types/responses``: ``ResponseCreateParams``, ``Response``):
``POST {base_url}{path}`` (``/responses`` by default) with ``Authorization: Bearer <key>``, or
an ``api-key: <key>`` header (``auth="api-key"``); a keyless server on a loopback or private
address gets no header at all.
- Every system message is kept: they are joined by blank lines into ``instructions``.
- A user turn is a ``message`` item of one ``input_text`` part. An assistant turn's text is
  the output message it came in (its id, status, one ``output_text`` part) when this family
  kept its place, else a ``message`` item whose content is that text (the SDK's
  ``EasyInputMessageParam``: an ``output_text`` part needs the output message's id and
  status); each of its calls is a ``function_call`` item (``call_id``,
  ``name``, the arguments text when it is a JSON object, else ``{}``). A tool turn is a
  ``function_call_output`` item: its ``call_id`` and the bounded tool result as ``output``.
- Tools go as ``{"type": "function", name, description, parameters, "strict": false}`` (the
  description cut as OpenAI's cap says); with tools, ``tool_choice`` is always sent: ``"auto"``,
  ``"none"``, ``"required"``, or ``{"type": "function", "name"}`` for one tool.
- ``max_output_tokens`` caps the answer; ``reasoning: {"effort"}`` is toolwire's reasoning (a
  budget-only ask gets the effort nearest to it); a run's answer schema goes as ``text: {"format":
  {"type": "json_schema", name, schema, strict}}``.
- ``store: false`` always: nothing of the run is kept by the vendor. A reasoning model's
  reasoning then lives only in its ``encrypted_content``, asked for with ``include:
  ["reasoning.encrypted_content"]`` when the request asks for reasoning or the model is a
  reasoning model (``REASONING_MODELS``; other models refuse the field: "Encrypted content is
  not supported with this model", pydantic/pydantic-ai issue 2865), or as ``encrypted_reasoning``
  says. The turn's reasoning items that carry it are kept as its provider state, in their order
  among the turn's messages and calls, and go back verbatim, in that order, on every later
  request to this family; another family's state never goes on this wire. Beside them the
  turn's text and calls go with the ids (and a message's ``phase``) they came with: newer
  models pair a reasoning item with the items after it by id ("Item 'fc_...' of type
  'function_call' was provided without its required 'reasoning' item"), so an id goes only
  beside its reasoning, never alone. A reasoning item without ``encrypted_content`` is not
  kept: with nothing stored, the API cannot resolve it ("Item with id 'rs_...' not found").
- Answers: ``output_text`` parts are the text, ``refusal`` parts the refusal (``Stop.REFUSAL``),
  ``function_call`` items the calls, reasoning summaries (or raw ``reasoning_text``) the
  thinking. ``status`` ``completed`` ends the turn ``END`` (``TOOL_CALLS`` with calls);
  ``incomplete`` ends it as ``incomplete_details.reason`` says (``INCOMPLETE``); ``failed`` is
  the typed error of its ``error`` object (the HTTP layer's); any other status is ``OTHER``.
- Usage: ``input_tokens`` counts every input token; ``input_tokens_details.cached_tokens`` and
  ``cache_write_tokens`` are the cache's part of them, ``output_tokens_details.
  reasoning_tokens`` the reasoning's part of ``output_tokens``.
- Streaming (``stream: true``) is assembled by ``responses_stream`` into the response a whole
  call returns, and decoded by the same ``decode``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from toolwire.core.errors import ConfigError, MalformedResponse
from toolwire.core.messages import ChatMessage, ProviderState, ToolCall, ToolSpec
from toolwire.core.output import OutputSchema
from toolwire.core.trust import TrustZone
from toolwire.providers.base import (
    TOOL_CHOICE_MODES,
    UNKNOWN_USAGE,
    CompletionRequest,
    CompletionResponse,
    DeltaSink,
    Stop,
    Usage,
)
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import check_key, effort_of, needs_key
from toolwire.providers.presets import OPENAI_BASE_URL, OPENAI_RESPONSES
from toolwire.providers.responses_stream import StreamedResponse
from toolwire.providers.wire import (
    DEFAULT_TRUST_ZONE,
    Assembly,
    HttpProvider,
    count,
    items,
    malformed,
    obj,
    replay_arguments,
    system_text,
    text,
    tool_call,
    tool_description,
)

AuthHeader = Literal["bearer", "api-key"]
DEFAULT_BASE_URL = OPENAI_BASE_URL
RESPONSES_PATH = "/responses"
ENCRYPTED_REASONING = "reasoning.encrypted_content"
# OpenAI's reasoning models (o1, o3, o4-mini, the gpt-5 family but its chat models, codex):
# the models that take ``include: ["reasoning.encrypted_content"]`` unasked-for reasoning.
REASONING_MODELS = re.compile(r"(?:^|/)(?:o\d|gpt-5(?!.*chat)|codex)", re.IGNORECASE)
INCOMPLETE = {
    "max_output_tokens": Stop.MAX_TOKENS,
    "content_filter": Stop.BLOCKED,
}
_MARKERS = frozenset({"message", "function_call"})  # the items a state keeps the place of


class ResponsesProvider(HttpProvider):
    """The Responses API with function tools, stateless (``store: false``)."""

    default_name = OPENAI_RESPONSES.name
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        path: str = RESPONSES_PATH,
        auth: AuthHeader = "bearer",
        trust_zone: TrustZone | str = DEFAULT_TRUST_ZONE,
        http: HttpSettings | None = None,
        name: str | None = None,
        family: str | None = None,
        encrypted_reasoning: bool | None = None,
        context_window: int | None = None,
    ) -> None:
        """``path`` is appended to ``base_url``; ``auth`` names the key's header; ``family``
        (this adapter's name by default) is whose provider state this adapter replays;
        ``encrypted_reasoning`` None: asked for as the module says."""
        key = (api_key or "").strip()
        self._family = family or self.default_name
        label = name or self.default_name
        if not path.startswith("/") or "?" in path or "#" in path:
            raise ConfigError(f"{label}: the API path must start with / and carry no query")
        if auth not in ("bearer", "api-key"):
            raise ConfigError(f"{label}: auth must be bearer or api-key")
        super().__init__(
            model=model,
            api_key=key,
            base_url=base_url,
            trust_zone=trust_zone,
            http=http,
            name=name,
            context_window=context_window,
            quirks=OPENAI_RESPONSES.quirks,
        )
        check_key(self, key, needed=self.needs_key())
        self.path = path
        self.auth: AuthHeader = auth
        self.encrypted_reasoning = encrypted_reasoning

    def needs_key(self) -> bool:
        return needs_key(self)

    @property
    def family(self) -> str:
        return self._family

    @property
    def pricing_family(self) -> str | None:
        """OpenAI's price table at OpenAI's own URL; none elsewhere."""
        return "openai" if self.base_url == OPENAI_BASE_URL else None

    def url(self) -> str:
        return f"{self.base_url}{self.path}"

    def headers(self, api_key: str) -> dict[str, str]:
        if not api_key:
            return {}
        if self.auth == "api-key":
            return {"api-key": api_key}
        return {"authorization": f"Bearer {api_key}"}

    def assembly(self, on_delta: DeltaSink | None) -> StreamedResponse:
        return StreamedResponse(on_delta)

    def assembled(self, assembly: Assembly) -> Any:
        url = self.stream_url()
        if isinstance(assembly, StreamedResponse) and not assembly.finished:
            # a cut stream must not pass for a whole, shorter answer
            where = self._http.where(url)
            what = "stream ended before response.completed"
            raise MalformedResponse(f"{self.name}: response {what} ({where})", endpoint=where)
        body = assembly.body()
        self._http.raise_in_band(body, url)  # a response.failed's error, typed
        return body

    def asks_encrypted_reasoning(self, request: CompletionRequest) -> bool:
        if self.encrypted_reasoning is not None:
            return self.encrypted_reasoning
        return request.reasoning is not None or bool(REASONING_MODELS.search(self.model))

    def encode(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "input": encode_input(request.messages, self.family),
            "store": False,
        }
        system = system_text(request.messages)
        if system:
            body["instructions"] = system
        if self.asks_encrypted_reasoning(request):
            body["include"] = [ENCRYPTED_REASONING]
        if request.tools:
            chars = self.quirks.description_chars
            body["tools"] = [encode_tool(t, chars) for t in request.tools]
            body["tool_choice"] = encode_choice(request.tool_choice)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body["max_output_tokens"] = request.max_tokens
        if request.reasoning is not None:
            body["reasoning"] = {"effort": effort_of(request.reasoning)}
        if request.output is not None:
            body["text"] = {"format": encode_output(request.output)}
        if request.stream:
            body["stream"] = True
        return body

    def decode(self, body: Any) -> CompletionResponse:
        body = obj(body)
        output = body.get("output")
        if not isinstance(output, list):
            raise malformed(self.name, "has no output items")
        if not all(isinstance(entry, dict) for entry in output):
            raise malformed(self.name, "has an output item that is not an object")
        status = text(body.get("status"))
        if status == "failed":  # one with an error object is the HTTP layer's typed error
            raise malformed(self.name, "failed without an error object")
        found = _Output(output)
        refusal = "".join(found.refusals) if found.refusals else None
        stop, finish_reason = stop_of(status, body, found.calls, refusal)
        return CompletionResponse(
            content="".join(found.texts),
            tool_calls=tuple(found.calls),
            usage=decode_usage(body.get("usage")),
            stop=stop,
            finish_reason=finish_reason,
            refusal=refusal,
            thinking=found.thinking(),
            model=text(body.get("model")) or None,
            provider_state=ProviderState(self.family, {"items": found.kept})
            if found.reasoned
            else None,
            response_id=text(body.get("id")) or None,
        )


class _Output:
    """What a response's output items hold, read once, in order."""

    def __init__(self, output: list[dict[str, Any]]) -> None:
        self.texts: list[str] = []
        self.refusals: list[str] = []
        self.calls: list[ToolCall] = []
        self.summaries: list[str] = []
        self.raw_reasoning: list[str] = []
        self.kept: list[dict[str, Any]] = []  # replayed reasoning, and the places of the rest
        self.reasoned = False
        for entry in output:
            self._read(entry)

    def _read(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "message":
            for part in map(obj, items(item.get("content"))):
                if part.get("type") == "output_text":
                    self.texts.append(text(part.get("text")))
                elif part.get("type") == "refusal":
                    self.refusals.append(text(part.get("refusal")))
            self.kept.append(_place("message", item, "phase"))
        elif kind == "function_call":
            call = tool_call(item.get("call_id"), item.get("name"), item.get("arguments"))
            self.calls.append(call)
            self.kept.append(_place("function_call", item) | {"call_id": call.id})
        elif kind == "reasoning":
            self.summaries += [text(obj(s).get("text")) for s in items(item.get("summary"))]
            self.raw_reasoning += [text(obj(c).get("text")) for c in items(item.get("content"))]
            if text(item.get("encrypted_content")):
                self.kept.append({k: v for k, v in item.items() if v is not None})
                self.reasoned = True

    def thinking(self) -> str | None:
        shown = [t for t in self.summaries if t] or [t for t in self.raw_reasoning if t]
        return "\n\n".join(shown) or None


def _place(kind: str, item: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """Where an item stood among the turn's reasoning: its type, its id and ``keys``."""
    kept = {"type": kind}
    for key in ("id", *keys):
        if text(item.get(key)):
            kept[key] = text(item.get(key))
    return kept


def stop_of(
    status: str, body: Mapping[str, Any], calls: list[ToolCall], refusal: str | None
) -> tuple[Stop, str | None]:
    """How the turn ended, and the API's word for it."""
    if refusal is not None:
        return Stop.REFUSAL, "refusal"
    if status == "incomplete":
        reason = text(obj(body.get("incomplete_details")).get("reason"))
        return INCOMPLETE.get(reason, Stop.OTHER), reason or status
    if status in ("completed", ""):
        return (Stop.TOOL_CALLS if calls else Stop.END), status or None
    return Stop.OTHER, status


def decode_usage(value: Any) -> Usage:
    """The response's usage; ``UNKNOWN`` when it has none."""
    if not isinstance(value, dict):
        return UNKNOWN_USAGE
    given = obj(value.get("input_tokens_details"))
    return Usage(
        prompt_tokens=count(value.get("input_tokens")),
        completion_tokens=count(value.get("output_tokens")),
        cache_read_tokens=count(given.get("cached_tokens")),
        cache_write_tokens=count(given.get("cache_write_tokens")),
        reasoning_tokens=count(obj(value.get("output_tokens_details")).get("reasoning_tokens")),
    )


def encode_output(output: OutputSchema) -> dict[str, Any]:
    """The run's answer schema as the text format (the Responses API's structured output)."""
    return {
        "type": "json_schema",
        "name": output.name,
        "schema": dict(output.schema),
        "strict": output.strict,
    }


def encode_choice(choice: str) -> str | dict[str, str]:
    if choice in TOOL_CHOICE_MODES:
        return choice
    return {"type": "function", "name": choice}


def encode_tool(spec: ToolSpec, description_chars: int) -> dict[str, Any]:
    return {
        "type": "function",
        "name": spec.name,
        "description": tool_description(spec, description_chars),
        "parameters": spec.parameters,
        "strict": False,
    }


def encode_input(messages: tuple[ChatMessage, ...], family: str) -> list[dict[str, Any]]:
    """The conversation as input items (system messages go as ``instructions``)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "tool":
            out.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.content,
                }
            )
        elif message.role == "assistant":
            out += assistant_items(message, family)
        else:
            content = [{"type": "input_text", "text": message.content}]
            out.append({"type": "message", "role": message.role, "content": content})
    return out


def assistant_items(message: ChatMessage, family: str) -> list[dict[str, Any]]:
    """An assistant turn's items: with this family's state, its reasoning verbatim in its place
    among the text and the calls; without, the text then the calls."""
    calls = iter(message.tool_calls)
    out: list[dict[str, Any]] = []
    kept_items = replayed(message, family)
    said = not message.content
    if not said and not any(k.get("type") == "message" for k in kept_items):
        out.append(text_item(message.content))  # no place kept for it: it comes first
        said = True
    for kept in kept_items:
        kind = kept.get("type")
        if kind == "reasoning":
            out.append(dict(kept))
        elif kind == "message" and not said:
            out.append(output_message(message.content, kept))
            said = True
        elif kind == "function_call":
            out += [call_item(c) | _id_of(kept) for c in _next(calls)]
    if not said:
        out.append(text_item(message.content))
    out += [call_item(c) for c in calls]
    return out


def replayed(message: ChatMessage, family: str) -> list[Mapping[str, Any]]:
    """The items this family's adapter kept on ``message``, if it kept any."""
    state = message.provider_state
    if state is None or state.provider != family:
        return []  # another family's state never goes on this wire
    kept = [obj(i) for i in items(obj(state.data).get("items"))]
    return [i for i in kept if i.get("type") == "reasoning" or i.get("type") in _MARKERS]


def _next(calls: Iterator[ToolCall]) -> list[ToolCall]:
    call = next(calls, None)
    return [] if call is None else [call]


def _id_of(kept: Mapping[str, Any]) -> dict[str, str]:
    return {"id": kept["id"]} if text(kept.get("id")) else {}


def output_message(content: str, kept: Mapping[str, Any]) -> dict[str, Any]:
    """The turn's text as the output message it came in (its id, its phase), beside its
    reasoning: newer models pair a reasoning item with the items after it by their ids."""
    if not text(kept.get("id")):
        return text_item(content)
    part = {"type": "output_text", "text": content, "annotations": []}
    item = {"type": "message", "id": kept["id"], "role": "assistant", "status": "completed",
            "content": [part]}  # fmt: skip
    return item | ({"phase": kept["phase"]} if text(kept.get("phase")) else {})


def text_item(content: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": content}


def call_item(call: ToolCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": replay_arguments(call),
    }
