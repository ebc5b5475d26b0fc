"""What every HTTP adapter shares: the adapter base class and tolerant readers of API bodies.

An adapter is two pure functions around one POST: ``encode(request) -> body`` and
``decode(body) -> CompletionResponse``. Keeping them pure lets tests compare wire shapes field by
field and lets the benchmark time them without a network.

Invariants:
- The envelope of a response (where the answer lives) must have the documented shape, or the call
  fails with ``MalformedResponse``.
- A malformed *tool call* never fails the call: a missing id gets a synthesised unique one, a
  missing name becomes ``""`` (the seam answers "unknown tool"), and arguments that are not JSON
  stay as the raw text (the seam answers with an error the model can read). The run goes on.
- A tool's description goes out whole, or cut to what the server's quirks say its API takes
  (``Quirks.description_chars``): a description too long for one vendor never fails the run.
- The only tool output an adapter encodes is ``ChatMessage.content`` of tool turns.
- A turn is honest about how it ended, whichever way it came (whole, streamed, or a JSON body
  answered to a stream request): a turn with no text and no tool calls is an
  ``EmptyCompletion`` error, never an empty answer; a refusal because the conversation
  outgrew the model's window (``context_overflow``: OpenAI's ``context_length_exceeded`` and
  what llama.cpp, vLLM, LiteLLM, Anthropic and Gemini say instead) is a turn that ended
  ``Stop.CONTEXT_WINDOW``; a malformed body's error names the endpoint.
"""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar, Protocol

from toolwire.core.errors import ConfigError, EmptyCompletion, MalformedResponse, ProviderError
from toolwire.core.messages import ChatMessage, ToolCall, ToolSpec
from toolwire.core.trust import TrustZone
from toolwire.providers.base import (
    CompletionRequest,
    CompletionResponse,
    Delta,
    DeltaSink,
    Stop,
)
from toolwire.providers.http import HttpSettings, JsonHttp, Signer
from toolwire.providers.presets import Quirks, quirks_for
from toolwire.providers.sse import SSE, StreamFormat
from toolwire.providers.tokens import TokenSource

DEFAULT_TRUST_ZONE = TrustZone.EXTERNAL_GLOBAL  # a hosted API is the least trusted place data goes
_CALL_ID_BYTES = 12  # 96 random bits: ids never collide within a run, or across runs
_THINK_BLOCK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)
# How servers say a request no longer fits the model's window, by code or type ...
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
# ... or only in words: vLLM and llama-cpp-python ("This model's maximum context length is"),
# LiteLLM ("ContextWindowExceededError"), Anthropic ("prompt is too long: N tokens > M
# maximum"), Gemini ("The input token count (N) exceeds the maximum number of tokens allowed"),
# Bedrock (a ValidationException: "Input is too long for requested model.").
_OVERFLOW_WORDS = re.compile(
    r"maximum context length|context ?window ?exceeded|exceeds? the (?:available )?context"
    r"|prompt is too long|input token count .{0,40}exceeds the maximum"
    r"|input is too long for requested model",
    re.IGNORECASE,
)
_EMPTY_STOPS = frozenset({Stop.END, Stop.TOOL_CALLS, Stop.OTHER})  # turns that had to say something


class Assembly(Protocol):
    """Takes a stream's events in order; ``body()`` is then the whole-call body."""

    def feed(self, event: str, data: Any) -> None: ...
    def body(self) -> Any: ...


class HttpProvider:
    """Base of the HTTP adapters: subclasses supply ``encode``, ``decode``, ``url``, ``headers``,
    and their ``default_name`` and ``default_base_url``."""

    default_name: ClassVar[str]
    default_base_url: ClassVar[str]
    token_source: TokenSource | None = None  # a cloud route's bearer token, instead of a key

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None = None,
        trust_zone: TrustZone | str = DEFAULT_TRUST_ZONE,
        http: HttpSettings | None = None,
        name: str | None = None,
        context_window: int | None = None,
        quirks: Quirks | None = None,
    ) -> None:
        """``quirks`` None: those of a server at ``base_url`` (``presets.quirks_for``)."""
        name = name or self.default_name
        if not model.strip():
            raise ConfigError(f"{name}: a model name is required")
        if context_window is not None and context_window < 1:
            raise ConfigError(f"{name}: a context window must be at least 1 token")
        # The model's window in tokens, when the caller knows it; None: the price table's
        # (toolwire.loop.window), for a vendor's own server.
        self.context_window = context_window
        self._name = name
        self.model = self.model_name(model)
        self._api_key = api_key
        self.base_url = checked_base_url(name, base_url or self.default_base_url)
        self._trust_zone = TrustZone.parse(trust_zone)
        self._http = JsonHttp(name, api_key, http or HttpSettings(), self.signer())
        self.quirks = quirks or quirks_for(self.base_url, self.family)

    def model_name(self, model: str) -> str:
        """The model as the API wants it named; adapters may normalise it."""
        return model

    def __repr__(self) -> str:  # never the key
        return f"<{type(self).__name__} model={self.model!r} base_url={self.base_url!r}>"

    @property
    def name(self) -> str:
        return self._name

    @property
    def trust_zone(self) -> TrustZone:
        return self._trust_zone

    @property
    def family(self) -> str:
        """The API this adapter speaks; provider state is replayed only within one family."""
        return self.default_name

    @property
    def pricing_family(self) -> str | None:
        """The price table's family: the vendor's own server only (a compatible server at
        another address runs another model at another price)."""
        return self.family if self.base_url == self.default_base_url else None

    def session(self) -> AbstractAsyncContextManager[None]:
        """One connection pool for the calls of a run; the loop enters it around a run."""
        return self._http.session()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """One call, whole or as server-sent events; both give the same normalised turn."""
        if request.stream and not self.streams(request):
            request = dataclasses.replace(request, stream=False)
            shown = request.on_delta  # the live view gets the whole answer once it is here
        else:
            shown = None
        try:
            body, shown = await self._exchange(request, shown)
        except ProviderError as exc:
            if context_overflow(exc):
                return CompletionResponse(stop=Stop.CONTEXT_WINDOW, finish_reason=exc.code
                                          or "context_length_exceeded")  # fmt: skip
            raise
        response = self._decoded(body, request)
        if shown is not None:
            show_whole(response, shown)
        return dataclasses.replace(response, raw=body) if request.capture_raw else response

    async def _exchange(
        self, request: CompletionRequest, shown: DeltaSink | None
    ) -> tuple[Any, DeltaSink | None]:
        """The turn's body, and the sink still to be shown it (a stream shows as it comes)."""
        headers = await self.request_headers()
        if not request.stream:
            return await self._http.post(self.url(), headers, self.encode(request)), shown
        assembly = self.assembly(request.on_delta)
        url = self.stream_url()
        events = 0

        def feed(name: str, data: Any) -> None:
            nonlocal events
            events += 1  # an empty stream is told apart by this count
            assembly.feed(name, data)

        whole = await self._http.stream(
            url, headers, self.encode(request), feed, self.stream_format()
        )
        if isinstance(whole, list):  # a JSON array of the stream's chunks (Gemini without SSE)
            for chunk in whole:
                assembly.feed("", chunk)
            return self.assembled(assembly), None
        if whole is not None:  # the server did not stream: its body is the whole turn
            return whole, request.on_delta
        if not events:
            raise self._empty(url, "the event stream ended without a single event")
        return self.assembled(assembly), None

    def _decoded(self, body: Any, request: CompletionRequest) -> CompletionResponse:
        url = self.stream_url() if request.stream else self.url()
        try:
            response = self.shaped(self.decode(body), request)
        except MalformedResponse as exc:
            where = self._http.where(url)
            raise MalformedResponse(f"{exc} ({where})", status=exc.status, body=exc.body,
                                    endpoint=where) from None  # fmt: skip
        if response.stop in _EMPTY_STOPS and not (response.content or response.tool_calls):
            said = response.finish_reason or "none"
            raise self._empty(url, f"no text and no tool calls (finish reason {said})")
        return response

    def _empty(self, url: str, what: str) -> EmptyCompletion:
        where = self._http.where(url)
        return EmptyCompletion(f"{self.name}: the model's answer was empty: {what} ({where})",
                               endpoint=where)  # fmt: skip

    def streams(self, request: CompletionRequest) -> bool:
        """Whether this request may go as a stream (a server's quirks may say no)."""
        return True

    def stream_url(self) -> str:
        return self.url()

    async def request_headers(self) -> dict[str, str]:
        """A call's credentials: the key's headers, or a bearer token from ``token_source``
        (refreshed as it nears expiry), which errors then mask as they mask a key."""
        if self.token_source is None:
            return self.headers(self._api_key)
        token = await self.token_source.token()
        self._http.hide(token)
        return {"authorization": f"Bearer {token}"}

    def stream_format(self) -> StreamFormat:
        """How the stream is framed: server-sent events, unless the API frames it otherwise."""
        return SSE

    def signer(self) -> Signer | None:
        """What signs each request (called once, as the adapter is made); None: the
        ``headers`` carry the credentials."""
        return None

    def assembly(self, on_delta: DeltaSink | None) -> Assembly:
        """What rebuilds a streamed turn into the body a whole call would have answered."""
        raise NotImplementedError

    def assembled(self, assembly: Assembly) -> Any:
        return assembly.body()

    def url(self) -> str:
        raise NotImplementedError

    def headers(self, api_key: str) -> dict[str, str]:
        raise NotImplementedError

    def encode(self, request: CompletionRequest) -> dict[str, Any]:
        raise NotImplementedError

    def shaped(
        self, response: CompletionResponse, request: CompletionRequest
    ) -> CompletionResponse:
        """The decoded turn as the request asked for it: an adapter that carries the answer
        schema as a tool makes its call the answer (see Anthropic's); else as it is."""
        return response

    def decode(self, body: Any) -> CompletionResponse:
        raise NotImplementedError


def context_overflow(error: ProviderError) -> bool:
    """Whether ``error`` is the server saying the conversation outgrew the model's window."""
    if error.status not in (None, 400, 413):
        return False
    if (error.code or "").lower() in _OVERFLOW_CODES or (error.type or "") in _OVERFLOW_CODES:
        return True
    return bool(_OVERFLOW_WORDS.search(error.body)) or bool(_OVERFLOW_WORDS.search(str(error)))


def show_whole(response: CompletionResponse, sink: DeltaSink) -> None:
    """A turn that came whole, for a live view that asked for deltas: thinking, then text."""
    if response.thinking:
        sink(Delta("thinking", response.thinking))
    if response.content:
        sink(Delta("content", response.content))


def checked_base_url(provider: str, base_url: str) -> str:
    """``base_url`` without a trailing slash, or a ``ConfigError`` saying what is wrong."""
    url = base_url.strip().rstrip("/")
    scheme, _, rest = url.partition("://")
    if scheme not in ("http", "https") or not rest or rest.startswith("/"):
        raise ConfigError(f"{provider}: base URL must be an http:// or https:// URL with a host")
    if "?" in rest or "#" in rest:
        raise ConfigError(f"{provider}: base URL must not carry a query or fragment")
    return url


def new_call_id() -> str:
    return "call_" + secrets.token_hex(_CALL_ID_BYTES)


def malformed(provider: str, what: str) -> MalformedResponse:
    return MalformedResponse(f"{provider}: response {what}")


def obj(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def count(value: Any) -> int:
    # bool is an int in Python, but a token count of ``true`` is a broken body, not 1.
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def tool_call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """A call from possibly malformed parts; see the module invariants."""
    ident = call_id if isinstance(call_id, str) and call_id else new_call_id()
    if isinstance(arguments, str | dict):
        return ToolCall.of(ident, text(name), arguments)
    # Anything else (a list, a number) is kept as its JSON text; the seam refuses it readably.
    return ToolCall.of(ident, text(name), None if arguments is None else json.dumps(arguments))


def tool_description(spec: ToolSpec, chars: int) -> str:
    """``spec``'s description as an API that takes at most ``chars`` characters gets it: whole
    when it fits, else cut and ending in an ellipsis (a cut one says so to the model)."""
    text = spec.description
    return text if len(text) <= chars else text[: chars - 1] + "\u2026"


def split_think(content: str) -> tuple[str, str | None]:
    """Inline ``<think>...</think>`` blocks split off the answer: ``(answer, thinking)``."""
    if "<think>" not in content:
        return content, None
    thoughts = [m.strip() for m in _THINK_BLOCK.findall(content)]
    answer = _THINK_BLOCK.sub("", content).strip()
    return answer, "\n\n".join(t for t in thoughts if t) or None


def system_text(messages: tuple[ChatMessage, ...]) -> str:
    """Every system message, in order, joined by blank lines: none is dropped."""
    return "\n\n".join(m.content for m in messages if m.role == "system")


def replay_arguments(call: ToolCall) -> str:
    """The arguments text to send back: the model's own when it is a JSON object, else ``{}``.

    Broken arguments stay in the trace as the model wrote them, but a server that parses the
    history (vLLM, llama.cpp) answers 400 to every later turn that replays them.
    """
    if not call.arguments.strip() or call.decoded_arguments() is None:
        return "{}"
    return call.arguments
